"""Optional dependencies: imported when first needed, with an error that names the extra."""
from __future__ import annotations

import importlib
from types import ModuleType

from lstm_data.errors import MissingExtraError

__all__ = ["require"]


def require(purpose: str, extra: str, *modules: str) -> ModuleType:
    """Import ``modules`` (dotted names, in order) and return the first.

    Parameters
    ----------
    purpose
        What needs them, for the message (``"reading ROOT files"``).
    extra
        The ``lstm_data`` extra that installs them (``"root"``).
    modules
        Module names; submodules (``"pyarrow.parquet"``) are loaded too.

    Raises
    ------
    MissingExtraError
        One is missing (an ``ImportError``): the message names the purpose, the modules,
        the ``pip install 'lstm_data[extra]'`` command and the original error.
    """
    if not modules:
        raise ValueError("require() needs at least one module name")
    try:
        loaded = [importlib.import_module(name) for name in modules]
    except ImportError as exc:
        names = " and ".join(dict.fromkeys(m.split(".")[0] for m in modules))
        raise MissingExtraError(f"{purpose} needs {names}: pip install 'lstm_data[{extra}]' ({exc})",
                                extra=extra) from None
    return loaded[0]
