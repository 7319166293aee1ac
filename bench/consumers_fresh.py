"""Consumers that keep batches, timed in fresh processes (part of the ``consumers`` stage).

A consumer that keeps batches alive (a deep queue, a list of an epoch's
batches) makes the process grow: its first pass pays for fresh memory, which
only a fresh process shows. Each run here is a new interpreter that generates
the bench data, then times passes over one epoch:

* ``keep48``: ``Batches[i]`` one after the other, the last 48 kept alive;
* ``collect``: every batch of the epoch collected into a list (dropped after the pass);
* ``numpy_keep48``, ``numpy_collect``: the same with NumPy's own ``np.empty`` plus
  ``fill`` of arrays of the same shapes: what a fresh allocation of the output
  bytes costs on this machine.

The child prints one JSON line: seconds per batch of every pass.
"""
from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from typing import Callable

import numpy as np

from lstm_data import Order
from lstm_data.batching import Batches, BatchSpec
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset

from bench import child_env

__all__ = ["PATTERNS", "fresh_passes", "layouts_of", "make_batches"]

CONFIG = dict(vars_input_slice=SLICE_VARS, vars_input_png3d=PNG3D_VARS, vars_input_png2d=PNG2D_VARS,
              var_target_total="trueE", var_target_primary="trueLepE")

#: pattern name -> (how many batches stay alive (None: all), our batches or NumPy's)
PATTERNS = {"keep48": (48, True), "collect": (None, True),
            "numpy_keep48": (48, False), "numpy_collect": (None, False)}


_DATASETS: dict = {}


def make_batches(n_rows: int, seed: int, batch_size: int) -> Batches:
    """The stage's batches: numu_v3 spec (``BatchSpec.from_lstm_ee``), ``nan_to=0.0`` (as Keras
    needs), shuffled; the dataset is made once per process."""
    ds = _DATASETS.get((n_rows, seed))
    if ds is None:
        ds = _DATASETS[(n_rows, seed)] = make_dataset(n_rows, seed)
    return Batches(ds, BatchSpec.from_lstm_ee(CONFIG).replace(nan_to=0.0), Order(batch_size=batch_size, seed=seed))


def _passes(make: Callable[[int], object], n: int, keep: int | None, passes: int) -> list[float]:
    """Seconds per batch of each pass; a pass keeps the last ``keep`` batches (None: all)."""
    out = []
    for _ in range(passes):
        held: collections.deque | list = [] if keep is None else collections.deque(maxlen=keep)
        t0 = time.perf_counter()
        for i in range(n):
            held.append(make(i))
        out.append((time.perf_counter() - t0) / n)
        del held
    return out


def layouts_of(batches) -> list[list[tuple[tuple[int, ...], str]]]:
    """Shape and dtype of every input and target array of every batch of the current epoch."""
    return [[(a.shape, a.dtype.str) for part in batches[i][:2] for a in part.values()]
            for i in range(len(batches))]


def _child(pattern: str, n_rows: int, seed: int, passes: int, layouts: list,
           batch_size: int) -> list[float]:
    keep, ours = PATTERNS[pattern]
    batches = make_batches(n_rows, seed, batch_size)  # made in both cases: the process grows alike
    if ours:
        return _passes(batches.__getitem__, len(batches), keep, passes)

    def fresh(i: int) -> list[np.ndarray]:
        arrays = []
        for shape, dtype in layouts[i]:
            a = np.empty(shape, dtype)
            a.fill(0.0)
            arrays.append(a)
        return arrays

    return _passes(fresh, len(layouts), keep, passes)


def fresh_passes(pattern: str, n_rows: int, seed: int, passes: int,
                 layouts: list | None = None, batch_size: int = 1024) -> list[float]:
    """Run ``pattern`` in a new interpreter; seconds per batch of each of its ``passes``.

    NumPy patterns need ``layouts`` (:func:`layouts_of` the same batches).
    """
    code = ("import json, sys\nfrom bench.consumers_fresh import _child\n"
            f"print('RESULT', json.dumps(_child({pattern!r}, {n_rows}, {seed}, {passes}, "
            f"{layouts!r}, {batch_size})))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=child_env())
    return [float(x) for x in json.loads(done.stdout.rsplit("RESULT", 1)[1])]
