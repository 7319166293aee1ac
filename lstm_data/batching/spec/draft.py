"""A first spec drafted from the data: the file a new user starts training from.

:func:`draft_spec` looks at a dataset and writes a version-2 spec file (TOML text)
that loads with :meth:`BatchSpec.from_toml <lstm_data.batching.spec.batch_spec.BatchSpec.from_toml>`
and builds batches as it is, with a comment on each choice:

- one ``scalars`` input of every scalar column that is not a target, and one
  ``ragged`` input per group (``input_<group>``) of all its variables;
- ``max_len``: the smallest length that keeps ``keep`` (99%) of the rows whole;
- ``empty = "one_step"`` on a group where some row has no element (a length of 0
  breaks ``pack_padded_sequence`` and cuDNN's LSTM), with how many rows that is;
- ``lengths = true`` (for ``pack_padded_sequence``) and ``mask = true`` (for Keras'
  ``mask=``), ``pad_value = 0.0`` written out;
- every input and target variable standardised, centres and scales fitted from the
  data (:func:`~lstm_data.batching.spec.fitting.fit_standardize`), and ``nan_to = 0.0``;
- the targets: the columns named, else those whose names start with ``true``,
  ``target`` or ``label``, else a placeholder (the last scalar column), said so in
  the file.

:func:`auto_standardize` is the step that marks every variable of a spec
``Standardize(center="auto", scale="auto")``, for :meth:`BatchSpec.fit` to fill in.
"""
from __future__ import annotations

import dataclasses
import re
import textwrap
from typing import TYPE_CHECKING, Sequence

import numpy as np

from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.fields import Ragged, Scalars, Standardize
from lstm_data._util.close_names import did_you_mean
from lstm_data.errors import SchemaError

if TYPE_CHECKING:
    from lstm_data.batching.spec.fields import Field
    from lstm_data.data.dataset import Dataset

__all__ = ["draft_spec", "auto_standardize", "max_len_keeping", "guess_targets", "class_labels"]

#: scalar columns whose names start so are taken for targets when none are named
_TARGET_PREFIXES = ("true", "target", "label")
#: a target of whole numbers with at most this many distinct values is taken for a class label
_MAX_CLASSES = 64


def class_labels(values: np.ndarray) -> np.ndarray | None:
    """The distinct values of ``values`` when they look like class labels, else ``None``.

    Class labels are whole numbers (any dtype) with 2 to 64 distinct values; a
    drafted spec leaves such a target unstandardised, for a classification loss.
    """
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    if finite.size == 0 or (values.dtype.kind == "f" and not np.array_equal(finite, np.round(finite))):
        return None
    distinct = np.unique(finite)
    return distinct if 2 <= distinct.size <= _MAX_CLASSES else None


def max_len_keeping(lengths: np.ndarray, fraction: float) -> int:
    """Smallest ``max_len`` that leaves at least ``fraction`` of the rows untruncated.

    Parameters
    ----------
    lengths
        Elements per row.
    fraction
        Share of rows to keep whole, in (0, 1].

    Returns
    -------
    int
        The length (0 without rows).
    """
    if len(lengths) == 0:
        return 0
    ordered = np.sort(lengths)
    k = int(np.ceil(fraction * len(ordered))) - 1
    return int(ordered[min(max(k, 0), len(ordered) - 1)])


def auto_standardize(spec: BatchSpec, *, targets: bool = True) -> BatchSpec:
    """``spec`` with every float variable ``Standardize(center="auto", scale="auto")``.

    A variable that has a ``Standardize`` already keeps it; integer outputs are left
    as they are. Fill the numbers in with ``spec.fit(dataset)`` (or ``lstm-data fit``).

    Parameters
    ----------
    spec
        Any spec.
    targets
        Standardise the targets too (a regression then predicts standardised values:
        ``y = prediction / scale + center``).

    Returns
    -------
    BatchSpec
        The changed copy.
    """
    def marked(fields: dict[str, Field]) -> dict[str, Field]:
        out: dict[str, Field] = {}
        for name, fld in fields.items():
            if np.dtype(fld.dtype).kind != "f":
                out[name] = fld
                continue
            given = dict(getattr(fld, "standardize", None) or {})
            std = {v: given.get(v, Standardize(center="auto", scale="auto")) for v in fld.vars}
            out[name] = dataclasses.replace(fld, standardize=std)
        return out

    return spec.replace(inputs=marked(dict(spec.inputs)),
                        targets=marked(dict(spec.targets)) if targets else dict(spec.targets))


def guess_targets(scalars: Sequence[str]) -> list[str]:
    """The scalar columns whose names start with ``true``, ``target`` or ``label`` (any case)."""
    return [s for s in scalars if s.lower().startswith(_TARGET_PREFIXES)]


def _key(prefix: str, name: str) -> str:
    """A bare TOML key for an output: ``prefix_`` + the name with other characters as ``_``."""
    return prefix + re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _comment(lines: list[str]) -> str:
    return "\n".join("# " + part for line in lines for part in textwrap.wrap(line, 98, subsequent_indent="  "))


def draft_spec(dataset: Dataset, *, targets: Sequence[str] | None = None, keep: float = 0.99,
               fraction: float = 0.1, seed: int = 0, source: str | None = None) -> str:
    """A version-2 spec file (TOML text) for ``dataset``, each choice commented.

    Parameters
    ----------
    dataset
        The training data.
    targets
        Scalar columns to predict; ``None``: guessed (names starting with ``true``,
        ``target`` or ``label``), else the last scalar column as a placeholder.
    keep
        Share of rows each group's ``max_len`` keeps whole, in (0, 1].
    fraction, seed
        The row sample the standardisation is fitted on (as :func:`fit_standardize`).
    source
        The data's name, written in the file's first comment.

    Returns
    -------
    str
        The file's text; ``BatchSpec.from_toml`` loads it and ``Batches`` builds from it.

    Raises
    ------
    SchemaError
        The data has no rows or no columns, or a named target is not a scalar column.
    ValueError
        ``keep`` or ``fraction`` is outside (0, 1].
    """
    if not 0.0 < keep <= 1.0:
        raise ValueError(f"keep must be in (0, 1], got {keep!r}")
    n = len(dataset)
    where = source or "the data"
    if n == 0:
        raise SchemaError(f"draft spec: {where} has no rows to draft a spec from")
    scalars = list(dataset.scalar_names)
    placeholder = False
    if targets is None:
        chosen = guess_targets(scalars)
        if not chosen and scalars:
            chosen, placeholder = [scalars[-1]], True
    else:
        chosen = list(targets)
        for t in chosen:
            if t not in scalars:
                raise SchemaError(f"draft spec: target {t!r} is not a scalar column of {where}"
                                  f"{did_you_mean(t, scalars)} (scalars: {', '.join(scalars) or 'none'})",
                                  variable=t)
    inputs: dict[str, Field] = {}
    notes: dict[str, list[str]] = {}
    features = [s for s in scalars if s not in chosen]
    if features:
        inputs["input_scalars"] = Scalars(features)
        notes["inputs.input_scalars"] = [
            f"every scalar column but the targets ({len(features)}): remove ids, weights and truth columns"]
    for group, names in dataset.groups.items():
        lengths = np.diff(np.asarray(dataset.offsets(group), dtype=np.int64))
        max_len = max(1, max_len_keeping(lengths, keep))
        empty = int((lengths == 0).sum())
        cut = int((lengths > max_len).sum())
        name = _key("input_", group)
        inputs[name] = Ragged(list(names), max_len=max_len, pad_value=0.0, lengths=True, mask=True,
                              empty="one_step" if empty else "keep")
        why = [f"group {group!r}: {len(names)} variables; elements per row: mean {lengths.mean():.2f}, "
               f"max {int(lengths.max())}",
               f"max_len = {max_len}: keeps {100 * (n - cut) / n:.4g}% of rows whole ({cut} of {n} rows "
               f"truncated; the smallest length keeping {100 * keep:g}%)"]
        if empty:
            why.append(f'empty = "one_step": {empty} of {n} rows ({100 * empty / n:.3g}%) have no element; '
                       "each becomes one step of pad values with length 1, as pack_padded_sequence "
                       "and cuDNN's LSTM need (\"keep\" leaves length 0, \"drop\" leaves the rows out)")
        else:
            why.append("every row has an element: no empty handling needed")
        why.append("pad_value = 0.0 (the centre after standardisation); lengths = true gives "
                   f"{name}_lengths (B,) for pack_padded_sequence, mask = true gives {name}_mask (B, P) "
                   "for Keras (mask=)")
        notes[f"inputs.{name}"] = why
    if not inputs:
        raise SchemaError(f"draft spec: {where} has no column to use as an input")
    labels = {t: class_labels(np.asarray(dataset.scalar(t))) for t in chosen}
    target_fields: dict[str, Field] = {
        _key("target_", t): Scalars([t], dtype="float32" if labels[t] is None else "int64") for t in chosen}
    for t in chosen:
        found = labels[t]
        how = ([f"class label: {found.size} classes ({', '.join(f'{v:g}' for v in found[:8])}"
                f"{', ...' if found.size > 8 else ''}), int64 and not standardised: train it with a "
                "classification loss (torch's CrossEntropyLoss, Keras' sparse_categorical_crossentropy)"] if found is not None
               else ["standardised like the inputs: a prediction p is p / scale + center in the data's units"])
        notes[f"targets.{_key('target_', t)}"] = (
            [f"PLACEHOLDER: {t!r} is only the last scalar column; put the variable to predict here"]
            if placeholder else [f"target {t!r}" + (" (guessed from its name)" if targets is None else "")]) + how
    regressed = {name: fld for (name, fld), t in zip(target_fields.items(), chosen) if labels[t] is None}
    spec = auto_standardize(BatchSpec(inputs=inputs, targets=regressed, nan_to=0.0))
    spec = spec.replace(targets={name: spec.targets.get(name, fld) for name, fld in target_fields.items()})
    spec = spec.fit(dataset, fraction=fraction, seed=seed)
    sampled = max(1, int(round(fraction * n))) if fraction < 1 else n
    head = [f"Drafted by lstm_data from {where} ({n} rows): check each choice, then train with it.",
            "Load with lstm_data.BatchSpec.from_toml(PATH). version = 2: ragged fields pad with 0.0.",
            f"Standardisation: centre and scale of every variable fitted on {sampled} sampled rows (seed {seed})",
            "(weaver-core's rule: median, 1 / the wider half of the 16-84% range). To fit other data,",
            'write center = "auto" and scale = "auto" and run lstm-data fit SPEC.toml --data DATA.',
            "nan_to = 0.0: a missing value (NaN) in the inputs becomes 0.0, the centre."]
    out: list[str] = [_comment(head)]
    for line in spec.to_toml().splitlines():
        table = re.fullmatch(r"\[((?:inputs|targets)\.[A-Za-z0-9_-]+)\]", line)
        if table and table.group(1) in notes:
            out.append(_comment(notes[table.group(1)]))
        out.append(line)
    return "\n".join(out) + "\n"
