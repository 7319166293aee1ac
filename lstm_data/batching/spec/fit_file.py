"""Fit the ``"auto"`` standardisation of a spec file and write the numbers back into it.

What ``lstm-data fit`` does: the spec is read, :func:`~lstm_data.batching.spec.fitting.fit_standardize`
computes weaver-core's automatic center and scale from a seeded share of the training rows,
and the file is replaced (a temporary file, then a rename) so training and inference read
the same numbers.
"""
from __future__ import annotations

import os

from lstm_data._util.declared import toml_text
from lstm_data._util.safe_output import temp_path
from lstm_data._util.spec_files import load_toml
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.fitting import fit_standardize
from lstm_data.data.dataset import Dataset
from lstm_data.errors import SchemaError

__all__ = ["fit_spec_file"]


def fit_spec_file(path: str | os.PathLike[str], dataset: Dataset, *, fraction: float = 0.1,
                  seed: int = 0) -> BatchSpec:
    """Fit the ``"auto"`` parameters of the spec file at ``path`` and write them into it.

    The file is rewritten as :meth:`BatchSpec.to_toml` writes it, keeping its other
    tables (``[order]``, ``[read]``); comments are not kept. It is written to a
    temporary file next to it and renamed over it, so a crash leaves the old file.

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
    others = {k: v for k, v in load_toml(path, lambda message: SchemaError(message, file=str(path))).items()
              if k in ("order", "read")}
    text = toml_text({**fitted.to_dict(), **others})
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

