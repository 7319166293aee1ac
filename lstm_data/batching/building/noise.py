"""Deterministic noise of :mod:`lstm_data.batching.spec.augment` applied to built batches.

The numbers come from a counter-based hash of ``(seed, epoch, row, element, variable)``
(SplitMix64, then Box-Muller in float32), so a batch has the same noise whichever thread,
process, shard or resumed run builds it.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, Mapping, Sequence

import numpy as np

from lstm_data.batching.spec.augment import NOISE_KINDS, Noise
from lstm_data.batching.spec.outputs import ResolvedField
from lstm_data.batching.spec.batch_spec import Batch

__all__ = ["Augmenter", "make_augmenter", "normal_noise", "normals", "element_keys"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1


# -- counter-based normal numbers -------------------------------------------------------------
def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _splitmix_int(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _variable_key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def element_keys(seed: int, epoch: int, rows: np.ndarray, elements: np.ndarray) -> np.ndarray:
    """One well-mixed uint64 key per ``(seed, epoch, rows[i], elements[i])`` (broadcast together)."""
    base = _splitmix_int(_splitmix_int(int(seed) & _MASK) ^ (int(epoch) & _MASK))
    r = np.asarray(rows).astype(np.uint64)
    e = np.asarray(elements).astype(np.uint64)
    with np.errstate(over="ignore"):
        keys: np.ndarray = _splitmix(_splitmix(np.uint64(base) ^ r) ^ e)
    return keys


def normals(keys: np.ndarray, variables: Sequence[str]) -> np.ndarray:
    """Standard normal numbers (float32) of shape ``keys.shape + (len(variables),)``.

    One SplitMix64 step of ``key ^ variable key`` gives two 24-bit uniforms (from
    its two halves), Box-Muller in float32 a normal number (its tails reach about
    5.8 sigma).
    """
    var_keys = np.array([_variable_key(v) for v in variables], dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = _splitmix(keys[..., None] ^ var_keys)
    u1 = ((h >> np.uint64(40)).astype(np.float32) + np.float32(1)) * np.float32(2.0 ** -24)  # (0, 1]
    angle = (h & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2.0 * math.pi * 2.0 ** -24)
    out: np.ndarray = np.sqrt(np.float32(-2) * np.log(u1)) * np.cos(angle)
    return out


def normal_noise(seed: int, epoch: int, variable: str, rows: np.ndarray, elements: np.ndarray) -> np.ndarray:
    """Standard normal numbers (float32), one per ``(rows[i], elements[i])``, for ``(seed, epoch, variable)``.

    A pure function of its arguments: the same row and element give the same
    number in any batch, order or process.

    Parameters
    ----------
    seed, epoch
        The order's seed and the epoch.
    variable
        The variable's name.
    rows, elements
        Dataset rows and element positions, broadcast together.

    Returns
    -------
    numpy.ndarray
        Normal numbers of the broadcast shape.
    """
    out: np.ndarray = normals(element_keys(seed, epoch, rows, elements), [variable])[..., 0]
    return out


# -- applying it to a batch ---------------------------------------------------------------------
class Augmenter:
    """Adds a spec's declared noise to built batches.

    Parameters
    ----------
    augment
        Variable -> :class:`Noise` (the spec's ``augment``).
    fields
        The spec mapped onto the dataset (:meth:`BatchSpec.validate`).
    row_lengths
        Group name -> every dataset row's element count (int64, length N).
    """

    def __init__(self, augment: Mapping[str, Noise], fields: Sequence[ResolvedField],
                 row_lengths: Any) -> None:
        self.augment = dict(augment)
        self.row_lengths = row_lengths
        # (output, group whose counts say which elements are real, [(column in the output, variable, noise)]):
        # one job per group of a field whose variables lie in several
        self.jobs: list[tuple[ResolvedField, str | None, list[tuple[int, str, Noise]]]] = []
        for f in fields:
            if f.role != "input":
                continue
            group_of = [f.group] * len(f.field.vars)
            for m in f.more:
                for j in m.at:
                    group_of[int(j)] = m.group
            for group in dict.fromkeys(group_of):
                cols = [(j, v, self.augment[v]) for j, v in enumerate(f.field.vars)
                        if v in self.augment and group_of[j] == group]
                if cols:
                    self.jobs.append((f, group, cols))

    def __getstate__(self) -> dict[str, Any]:
        return {}  # holds the builder's tables: the owning Batches makes a new one after unpickling

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.augment, self.row_lengths, self.jobs = {}, None, []

    def apply(self, batch: Batch, rows: np.ndarray, seed: int, epoch: int) -> Batch:
        """``batch`` with the noise of ``(seed, epoch)`` added to its augmented inputs.

        Arrays are changed in place when writable, else replaced by changed copies
        (a RAM cache's batches stay as they were).

        Parameters
        ----------
        batch
            ``(inputs, targets, weights)`` as built.
        rows
            The dataset rows of the batch, in batch order.
        seed, epoch
            The order's seed and the epoch the batch is served in.

        Returns
        -------
        tuple of dict
            The batch (the same dicts).
        """
        inputs = batch[0]
        rows = np.asarray(rows, dtype=np.int64)
        for f, group, cols in self.jobs:
            arr = inputs[f.name]
            if not arr.flags.writeable or not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr).copy() if not arr.flags.writeable else np.ascontiguousarray(arr)
                inputs[f.name] = arr
            at: tuple[np.ndarray, ...]
            if f.group is None:
                at = (np.arange(len(rows)),)
                elem_rows, elements = rows, np.zeros(len(rows), dtype=np.int64)
                values = arr  # (B, S)
            else:
                values, at, elem_rows, elements = self._real_elements(f, group, arr, inputs, rows)
            # every augmented column at once: z is (elements, columns)
            z = normals(element_keys(seed, epoch, elem_rows, elements), [var for _, var, _ in cols])
            # positions in the flat buffer of ``arr`` (``values`` is a view of it): one 1-D gather/scatter
            steps = [st // values.itemsize for st in values.strides]
            first = at[0] * steps[0]
            for a, st in zip(at[1:], steps[1:-1]):
                first = first + a * st
            flat = arr.reshape(-1)
            for kind in NOISE_KINDS:
                pick = [c for c, (_, _, noise) in enumerate(cols) if noise.kind == kind]
                if not pick:
                    continue
                columns = np.array([cols[c][0] for c in pick], dtype=np.intp)
                sigma = np.array([cols[c][2].sigma for c in pick], dtype=values.dtype)
                lin = first[:, None] + columns[None, :] * steps[-1]
                noise_part = sigma * z[:, pick].astype(values.dtype)
                if kind == "gaussian":
                    flat[lin] = flat[lin] + noise_part
                else:
                    flat[lin] = flat[lin] * (1 + noise_part)
        return batch

    def _real_elements(self, f: ResolvedField, group: str | None, arr: np.ndarray, inputs: Mapping[str, np.ndarray],
                       rows: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
        """``(values, index, rows, elements)``: a view whose ``values[index + (column,)]`` are the
        field's real elements (of ``group``'s variables), with each one's dataset row and position in its row."""
        spec = f.ragged
        lens = np.asarray(self.row_lengths(group))[rows]
        form = spec.form
        if not form.has_slots:  # the real elements of every row one after another
            cu = np.asarray(inputs[f.name + "_cu_seqlens"], dtype=np.int64)
            counts = np.diff(cu)
            b = np.repeat(np.arange(len(rows)), counts)
            k = np.arange(int(cu[-1])) - cu[:-1][b]
            real = k < lens[b]  # the padded step of an empty row (one_step) is not real
            t = np.nonzero(real)[0]
            return arr, (t,), rows[b[t]], k[t]
        values = form.rows_view(arr)
        width = values.shape[1]
        kept = np.minimum(lens, width)
        slot = np.arange(width)
        start = (width - kept) if getattr(spec, "padding", "post") == "pre" else np.zeros_like(kept)
        k = slot[None, :] - start[:, None]
        if getattr(spec, "pad_mode", "constant") == "wrap":  # repeated elements repeat their noise
            real = (k >= 0) & (kept[:, None] > 0)
            k = np.where(real, k % np.maximum(kept, 1)[:, None], k)
        else:
            real = (k >= 0) & (k < kept[:, None])
        bi, si = np.nonzero(real)
        return values, (bi, si), rows[bi], k[bi, si]


def make_augmenter(spec: Any, fields: Sequence[ResolvedField], row_lengths: Any) -> Augmenter | None:
    """The :class:`Augmenter` of ``spec``'s ``augment``, or ``None`` when it declares none."""
    augment = getattr(spec, "augment", None)
    return Augmenter(augment, fields, row_lengths) if augment else None
