"""Fit the ``"auto"`` standardisation of a spec file and write the numbers back into it.

What ``lstm-data fit`` does: the spec is read, :func:`~lstm_data.batching.spec.fitting.fit_standardize`
computes weaver-core's automatic center and scale from a seeded share of the training rows,
and the file is replaced (a temporary file, then a rename) so training and inference read
the same numbers. Only the ``"auto"`` values change: the file keeps its comments and layout
(:mod:`lstm_data._util.toml_edit`), and is written whole from the fitted spec only when one
of them is spelt where a one-line edit cannot reach it (over several lines).
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any

from lstm_data._util.declared import toml_text
from lstm_data._util.safe_output import temp_path
from lstm_data._util.spec_files import load_toml, read_spec_text
from lstm_data._util.toml_edit import KeyPath, set_values, toml_number
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.fitting import fit_standardize
from lstm_data.batching.spec.standardize import AUTO
from lstm_data.data.dataset import Dataset
from lstm_data.errors import SchemaError

__all__ = ["fit_spec_file"]

_log = logging.getLogger("lstm_data")
#: the table of each role in a spec file
_ROLE_TABLES = {"input": "inputs", "target": "targets"}


def fit_spec_file(path: str | os.PathLike[str], dataset: Dataset, *, fraction: float = 0.1,
                  seed: int = 0) -> BatchSpec:
    """Fit the ``"auto"`` parameters of the spec file at ``path`` and write them into it.

    Only the ``"auto"`` values change, where they are written: comments, order and
    layout are kept. A file whose ``"auto"`` is written over several lines is rewritten
    as :meth:`BatchSpec.to_toml` writes it instead, keeping its other tables (``[order]``,
    ``[read]``) but not its comments. It is written to a temporary file next to it and
    renamed over it, so a crash leaves the old file.

    Parameters
    ----------
    path
        The spec's TOML file.
    dataset
        The training data.
    fraction, seed
        As :func:`fit_standardize`.

    Returns
    -------
    BatchSpec
        The fitted spec (what the file now holds).
    """
    spec = BatchSpec.from_toml(path)
    fitted = fit_standardize(spec, dataset, fraction=fraction, seed=seed)
    text = _edited(path, spec, fitted)
    tmp = temp_path(os.fspath(path))
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return fitted



def _fitted_values(spec: BatchSpec, fitted: BatchSpec) -> dict[KeyPath, float]:
    """Key path in the spec file -> number, for every ``"auto"`` center and scale of ``spec``."""
    fitted_fields = {(role, name): fld for role, name, fld in fitted.fields()}
    out: dict[KeyPath, float] = {}
    for role, name, fld in spec.fields():
        new = getattr(fitted_fields[role, name], "standardize", None) or {}
        for var, std in (getattr(fld, "standardize", None) or {}).items():
            for key in ("center", "scale"):
                if getattr(std, key) == AUTO:
                    out[(_ROLE_TABLES[role], name, "standardize", var, key)] = float(getattr(new[var], key))
    return out


def _with(tables: Any, path: KeyPath, value: float) -> None:
    for key in path[:-1]:
        tables = tables[key]
    tables[path[-1]] = value


def _edited(path: str | os.PathLike[str], spec: BatchSpec, fitted: BatchSpec) -> str:
    """The new text of the spec file: its own text with the numbers in place of ``"auto"``, or,
    when an ``"auto"`` is out of reach of a one-line edit, the fitted spec written whole."""
    def error(message: str) -> SchemaError:
        return SchemaError(message, file=os.fspath(path))

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python < 3.11
        import tomli as tomllib

    original = read_spec_text(path, error)
    numbers = _fitted_values(spec, fitted)
    text, left = set_values(original, {key: toml_number(v) for key, v in numbers.items()})
    if not left:
        want = tomllib.loads(original)
        for key, value in numbers.items():
            _with(want, key, value)
        try:
            if tomllib.loads(text) == want:  # only the "auto" values changed
                return text
        except tomllib.TOMLDecodeError:
            pass
    _log.info("%s: an 'auto' value is written where a one-line edit cannot reach it; the fitted spec is "
              "written whole (its comments are not kept)", os.fspath(path))
    others = {k: v for k, v in load_toml(path, error).items() if k in ("order", "read")}
    return toml_text({**fitted.to_dict(), **others})
