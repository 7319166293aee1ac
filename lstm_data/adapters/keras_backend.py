"""What to tell a user whose ``import keras`` failed: Keras missing, or the backend it is set to."""
from __future__ import annotations

import json
import os

__all__ = ["keras_import_problem"]


def _configured_backend() -> str | None:
    """The backend named by ``KERAS_BACKEND``, else by Keras' own ``keras.json`` (``KERAS_HOME`` or ``~/.keras``)."""
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as f:
            backend = json.load(f).get("backend")
    except (OSError, ValueError, AttributeError):
        return None
    return backend if isinstance(backend, str) else None


def keras_import_problem(exc: ImportError) -> str:
    """The message for a failed ``import keras``: which package is missing, and how to get it.

    Parameters
    ----------
    exc
        The error ``import keras`` raised.

    Returns
    -------
    str
        Keras itself missing: the extra to install. Keras present but its backend
        missing (``KERAS_BACKEND=jax`` without jax): the backend, where it was chosen,
        and how to choose an installed one.
    """
    missing = exc.name or ""
    if missing in ("", "keras") or missing.startswith("keras."):
        return ("lstm_data.keras needs Keras 3: pip install 'lstm_data[keras]' plus a backend "
                "(e.g. 'lstm_data[keras,torch]' with KERAS_BACKEND=torch)")
    backend = _configured_backend()
    chosen = (f"its backend {backend!r} (KERAS_BACKEND or keras.json)" if backend
              else "its default backend 'tensorflow'")
    return (f"Keras is installed, but {chosen} cannot be imported: no module named {missing!r}. "
            f"Install that backend, or choose an installed one, e.g. KERAS_BACKEND=torch with "
            f"pip install 'lstm_data[torch]'")
