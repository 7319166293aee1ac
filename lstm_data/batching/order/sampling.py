"""Which rows an epoch draws: class-balanced and histogram-reweighted sampling (``Order(sample=...)``).

Per-row weights (``Order(weights=...)``) change how much each row counts in the
loss; sampling changes which rows are drawn, and how often. ``sample`` is a table:

``classes``
    A scalar column of integer class labels. Each class gets its share of the
    epoch's draws: equal shares by default (class-balanced), or ``class_weights``
    (one number per class, in the order of the sorted labels).
``vars``, ``bins``
    One or two scalar columns and their bin edges: inside each class the rows are
    drawn so that the drawn histogram of ``vars`` follows ``target``, as
    weaver-core's ``reweight_vars`` / ``reweight_bins`` / ``reweight_classes`` do.
``target``
    ``"flat"`` (default): every non-empty bin equally often; ``"ref"``: the
    histogram of the first class (weaver-core's ``reweight_method = "ref"``); or
    the target histogram itself (a list, or a list of lists for two variables, one
    number per bin).
``threshold``
    weaver-core's ``reweight_threshold`` (a percentile): with ``"flat"``, bins
    fuller than that percentile of the class's bins are thinned to it and emptier
    ones keep their rows; with ``"ref"``, the ratio to the reference is capped at
    its ``100 - threshold`` percentile. Default: no cap, the target exactly (with
    replacement, the rows of a sparse bin then repeat often).
``overflow``
    ``"discard"`` (default, as weaver-core): rows outside the bin edges are never
    drawn; ``"clip"``: they count in the first or last bin.
``replacement``
    ``true`` (default): draws with replacement; ``false``: a row at most once per
    epoch (each class must then hold enough rows for its share).
``epoch_size``
    Rows drawn per epoch (default: the rows of the data or view).

The sizes these declare are checked before anything is allocated: an
``epoch_size`` whose draws' positions, or bins whose histograms (one per class),
would take more than this process may still allocate are an
:class:`~lstm_data.errors.OptionError` naming the key and the size (and the
file of an ``Order.from_toml``).

A row's draw probability is its class's share times ``target[bin] / count[bin]``
of its class, normalised inside the class. The draws of each class are exact
(the largest-remainder split of ``epoch_size`` by the shares); which rows are
drawn is a pure function of ``(seed, epoch)``, so sampled epochs reproduce,
resume mid-epoch and shard like any other order. With ``shuffle=True`` the draws
are shuffled, with ``False`` they keep the data's order, and with ``"block"``
every read window draws its own rows' share (a window is still read once).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from lstm_data.batching.order.plan import EpochKey, Plan, StageDefaults, Windows
from lstm_data.batching.order.rows import epoch_rng
from lstm_data.batching.spec.sizes import human_bytes, memory_room
from lstm_data.errors import OptionError, SchemaError

__all__ = ["check_sample", "Sampling", "SampledRows", "SAMPLE_STREAM"]

#: the :func:`~lstm_data.batching.order.rows.epoch_rng` stream of the draws
SAMPLE_STREAM = 7

#: bytes an epoch holds per draw: the draws, their permutation, the epoch's order and its batches' rows
_DRAW_BYTES = 4 * np.dtype(np.intp).itemsize
#: bytes per bin and class while the draw weights are made: counts (int64 and float64), target and ratio
_BIN_BYTES = 4 * 8

_KEYS = ("classes", "class_weights", "vars", "bins", "target", "threshold", "overflow", "replacement",
         "epoch_size")


def _numbers(value: Any, what: str) -> list[float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)):
        raise OptionError(f"sample.{what} must be a list of numbers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(v) or v < 0:
            raise OptionError(f"sample.{what} must hold finite numbers >= 0, got {v!r}")
        out.append(float(v))
    return out


def check_sample(value: Any) -> dict[str, Any]:
    """The ``sample`` table of an :class:`~lstm_data.batching.order.options.Order`, checked and normalised.

    Parameters
    ----------
    value
        A mapping with the keys of the module docstring.

    Returns
    -------
    dict
        The same keys, with plain values (lists, numbers, strings), for TOML.

    Raises
    ------
    OptionError
        An unknown key, a value of the wrong kind, neither ``classes`` nor ``vars``.
    """
    if not isinstance(value, Mapping):
        raise OptionError(f"sample must be a table (classes=, vars=, bins=, ...), got {value!r}")
    from lstm_data._util.declared import unknown_option
    for key in value:
        if key not in _KEYS:
            raise unknown_option(str(key), _KEYS, "Order.sample")
    out: dict[str, Any] = {}
    classes = value.get("classes")
    if classes is not None:
        if not isinstance(classes, str) or not classes:
            raise OptionError(f"sample.classes must name a scalar column of class labels, got {classes!r}")
        out["classes"] = classes
    if value.get("class_weights") is not None:
        if classes is None:
            raise OptionError("sample.class_weights needs sample.classes (the label column)")
        weights = _numbers(value["class_weights"], "class_weights")
        if not weights or sum(weights) <= 0:
            raise OptionError("sample.class_weights must hold a positive number")
        out["class_weights"] = weights
    variables = value.get("vars")
    if variables is not None:
        if isinstance(variables, str):
            variables = [variables]
        if not isinstance(variables, (list, tuple)) or not 1 <= len(variables) <= 2 \
                or not all(isinstance(v, str) and v for v in variables):
            raise OptionError(f"sample.vars must name one or two scalar columns, got {value['vars']!r}")
        bins = value.get("bins")
        if not isinstance(bins, (list, tuple)) or len(bins) != len(variables):
            raise OptionError(f"sample.bins must give one list of bin edges per variable of {list(variables)}, "
                              f"got {bins!r}")
        edges = []
        for name, b in zip(variables, bins):
            if isinstance(b, (str, bytes)) or not isinstance(b, (list, tuple, np.ndarray)) or not all(
                    isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in b):
                raise OptionError(f"sample.bins of {name!r} must be a list of numbers, got {b!r}")
            e = [float(x) for x in b]
            if len(e) < 2 or any(not math.isfinite(x) for x in e) or np.any(np.diff(e) <= 0):
                raise OptionError(f"sample.bins of {name!r} must be at least two increasing finite edges, got {b!r}")
            edges.append(e)
        out["vars"], out["bins"] = list(variables), edges
        target = value.get("target", "flat")
        if isinstance(target, str):
            if target not in ("flat", "ref"):
                raise OptionError(f"sample.target must be 'flat', 'ref' or a histogram, got {target!r}")
            if target == "ref" and classes is None:
                raise OptionError("sample.target='ref' (the first class's histogram) needs sample.classes")
        else:
            shape = tuple(len(e) - 1 for e in edges)
            arr = np.asarray(target, dtype=np.float64) if isinstance(target, (list, tuple, np.ndarray)) else None
            if arr is None or arr.shape != shape or not np.all(np.isfinite(arr)) or np.any(arr < 0) \
                    or arr.sum() <= 0:
                raise OptionError(f"sample.target must be 'flat', 'ref' or one number >= 0 per bin (shape "
                                  f"{list(shape)}), got {target!r}")
            target = arr.tolist()
        out["target"] = target
        overflow = value.get("overflow", "discard")
        if overflow not in ("discard", "clip"):
            raise OptionError(f"sample.overflow must be 'discard' or 'clip', got {overflow!r}")
        out["overflow"] = overflow
        threshold = value.get("threshold")
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < 100:
                raise OptionError(f"sample.threshold must be a percentile in [0, 100), got {threshold!r}")
            if not isinstance(target, str):
                raise OptionError("sample.threshold applies to target 'flat' or 'ref', not to a given histogram")
            out["threshold"] = float(threshold)
    elif value.get("bins") is not None or value.get("target") is not None:
        raise OptionError("sample.bins and sample.target need sample.vars (the variables to reweight)")
    if classes is None and variables is None:
        raise OptionError("sample needs classes= (class-balanced) or vars= with bins= (reweighted), or both")
    replacement = value.get("replacement", True)
    if not isinstance(replacement, (bool, np.bool_)):
        raise OptionError(f"sample.replacement must be true or false, got {replacement!r}")
    out["replacement"] = bool(replacement)
    size = value.get("epoch_size")
    if size is not None:
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or size < 1:
            raise OptionError(f"sample.epoch_size must be a positive int, got {size!r}")
        out["epoch_size"] = int(size)
        _check_room("sample.epoch_size", int(size), _DRAW_BYTES, "draws", "draw fewer rows per epoch")
    if "bins" in out:
        _check_room("sample.bins", _n_bins(out["bins"]), _BIN_BYTES, "bins",
                    "give fewer bin edges", f" ({' x '.join(str(len(e) - 1) for e in out['bins'])})")
    return out


def _n_bins(edges: list[list[float]]) -> int:
    return math.prod(len(e) - 1 for e in edges)


def _check_room(key: str, count: int, per: int, what: str, hint: str, shape: str = "") -> None:
    """Refuse ``count`` items of ``per`` bytes each that do not fit in the memory this process may
    still allocate, naming ``key`` and the size."""
    need = count * per
    room = memory_room()
    if need > room:
        raise OptionError(f"{key}: {count} {what}{shape} take {human_bytes(need)} ({need} bytes) to draw, more "
                          f"than the {human_bytes(room)} this process may still allocate; {hint}")


def _capped(ratio: np.ndarray, counts: np.ndarray, target: str, threshold: float) -> np.ndarray:
    """weaver-core's capped weights per class (rows: classes): no bin is drawn more than its share.

    ``"flat"``: bins fuller than the ``threshold`` percentile of the class's bins
    (those above 1 % of its median) are thinned to it, the others keep their rows.
    ``"ref"``: the reference-to-class ratio is divided by its ``100 - threshold``
    percentile and capped at 1.
    """
    out = np.zeros_like(ratio)
    for c in range(len(counts)):
        h, r = counts[c], ratio[c]
        if not np.any(h > 0):
            continue
        if target == "flat":
            kept = h[h > np.median(h[h > 0]) * 0.01]
            ref = np.percentile(kept, threshold)
            out[c] = np.where(h > 0, np.minimum(1.0, np.divide(ref, h, out=np.zeros_like(h), where=h > 0)), 0.0)
        else:
            upper = np.percentile(r[r > 0], 100 - threshold) if np.any(r > 0) else 1.0
            out[c] = np.clip(r / upper, 0.0, 1.0)
    return out


def _largest_remainder(total: int, shares: np.ndarray) -> np.ndarray:
    """Split ``total`` into ints proportional to ``shares`` (largest remainders get the rest)."""
    exact = total * shares / shares.sum()
    counts: np.ndarray = np.floor(exact).astype(np.int64)
    rest = total - int(counts.sum())
    if rest:
        counts[np.argsort(-(exact - counts), kind="stable")[:rest]] += 1
    return counts


class Sampling:
    """The draw probabilities of one view's rows, and the draws of each epoch.

    Parameters
    ----------
    dataset
        The dataset (its scalar columns name the classes and variables).
    rows
        The dataset rows of the positions the order indexes.
    sample
        A checked ``sample`` table (:func:`check_sample`).

    Attributes
    ----------
    epoch_size : int
        Rows drawn per epoch.
    labels : numpy.ndarray or None
        The class label of every position (``None`` without ``classes``).
    classes : numpy.ndarray
        The distinct labels, sorted (one class ``0`` without ``classes``).

    Raises
    ------
    SchemaError
        A named column is missing or its labels are not integers.
    OptionError
        ``class_weights`` does not have one number per class, no row can be drawn,
        or a class has too few rows for its share without replacement.
    """

    def __init__(self, dataset: Any, rows: np.ndarray, sample: Mapping[str, Any]) -> None:
        self.sample = dict(sample)
        n = len(rows)
        self.epoch_size = int(sample.get("epoch_size", n))
        self.replacement = bool(sample.get("replacement", True))
        self.labels: np.ndarray | None = None
        codes = np.zeros(n, dtype=np.intp)
        self.classes = np.zeros(1, dtype=np.int64)
        if "classes" in sample:
            raw = self._column(dataset, sample["classes"], rows)
            if raw.size and (not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw))):
                bad = int(np.flatnonzero(~np.isfinite(raw) | (raw != np.round(raw)))[0])
                raise SchemaError(f"sample.classes: column {sample['classes']!r} holds {raw[bad]!r}, not an "
                                  "integer class label", variable=sample["classes"], row=int(rows[bad]))
            self.labels = raw.astype(np.int64)
            self.classes, codes = np.unique(self.labels, return_inverse=True)
        shares = np.ones(len(self.classes))
        if "class_weights" in sample:
            if len(sample["class_weights"]) != len(self.classes):
                raise OptionError(f"sample.class_weights has {len(sample['class_weights'])} numbers for the "
                                  f"{len(self.classes)} classes {self.classes.tolist()} of {sample['classes']!r}")
            shares = np.asarray(sample["class_weights"], dtype=np.float64)
        weights = np.ones(n)
        if "vars" in sample:
            weights = self._bin_weights(dataset, rows, codes)
        self.codes = codes
        self.weights = weights  # relative draw weight of each position inside its class
        mass = np.bincount(codes, weights=weights, minlength=len(self.classes))
        shares = np.where(mass > 0, shares, 0.0)
        if shares.sum() <= 0:
            raise OptionError("sample: no row can be drawn (every class is empty or outside the bins)")
        self.shares = shares / shares.sum()
        self.per_class = _largest_remainder(self.epoch_size, self.shares)
        self.members = [np.flatnonzero((codes == c) & (weights > 0)) for c in range(len(self.classes))]
        if not self.replacement:
            for c, m in enumerate(self.per_class):
                if m > len(self.members[c]):
                    raise OptionError(f"sample: class {self.classes[c]} has {len(self.members[c])} rows to draw "
                                      f"but its share of an epoch is {m} draws without replacement: set "
                                      "replacement=true or a smaller epoch_size")

    @staticmethod
    def _column(dataset: Any, name: str, rows: np.ndarray) -> np.ndarray:
        if name not in dataset.scalar_names:
            raise SchemaError(f"sample: no scalar column {name!r}; the data has {sorted(dataset.scalar_names)}",
                              variable=name)
        return np.asarray(dataset.scalar(name, rows), dtype=np.float64)

    def _bin_weights(self, dataset: Any, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """``target[bin] / count[bin]`` of every position's class (0 outside the bins)."""
        edges = [np.asarray(e) for e in self.sample["bins"]]
        shape = tuple(len(e) - 1 for e in edges)
        flat = np.zeros(len(rows), dtype=np.intp)
        inside = np.ones(len(rows), dtype=bool)
        for name, e in zip(self.sample["vars"], edges):
            x = self._column(dataset, name, rows)
            if self.sample.get("overflow", "discard") == "clip":
                x = np.clip(np.nan_to_num(x, nan=e[0]), e[0], e[-1])
            idx = np.searchsorted(e, x, side="right") - 1
            idx[x == e[-1]] = len(e) - 2  # the last edge belongs to the last bin, as numpy.histogram
            inside &= (idx >= 0) & (idx < len(e) - 1) & np.isfinite(x)
            flat = flat * (len(e) - 1) + np.clip(idx, 0, len(e) - 2)
        n_bins = int(np.prod(shape))
        n_classes = len(self.classes)
        _check_room("sample.bins", n_bins * n_classes, _BIN_BYTES, "bins",
                    "give fewer bin edges", f" ({' x '.join(map(str, shape))} for each of {n_classes} classes)")
        counts = np.bincount(codes[inside] * n_bins + flat[inside], minlength=n_classes * n_bins)
        counts = counts.reshape(n_classes, n_bins).astype(np.float64)
        target = self.sample.get("target", "flat")
        if target == "flat":
            goal = (counts > 0).astype(np.float64)
        elif target == "ref":
            goal = np.broadcast_to(counts[0], counts.shape)
        else:
            goal = np.broadcast_to(np.asarray(target, dtype=np.float64).reshape(-1), counts.shape)
        ratio = np.divide(goal, counts, out=np.zeros_like(counts), where=counts > 0)
        if "threshold" in self.sample:
            ratio = _capped(ratio, counts, target, self.sample["threshold"])
        return np.where(inside, ratio[codes, flat], 0.0)

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """The positions drawn for one epoch, class by class (not shuffled)."""
        parts = []
        for c, m in enumerate(self.per_class):
            idx = self.members[c]
            if m == 0 or len(idx) == 0:
                continue
            w = self.weights[idx]
            if self.replacement:
                parts.append(idx[rng.choice(len(idx), size=int(m), p=w / w.sum())])
            else:  # weighted draws without replacement: the m largest u ** (1 / w)
                keys = np.log(rng.random(len(idx))) / w
                parts.append(idx[np.argpartition(-keys, int(m) - 1)[:int(m)]] if m < len(idx) else idx)
        return np.concatenate(parts).astype(np.intp) if parts else np.zeros(0, dtype=np.intp)

    def counts(self, positions: np.ndarray) -> dict[int, int]:
        """Draws per class label among ``positions`` (``{0: n}`` without classes)."""
        per = np.bincount(self.codes[positions], minlength=len(self.classes))
        return {int(label): int(k) for label, k in zip(self.classes, per)}

    def order(self, seed: int, epoch: int, shuffle: bool) -> np.ndarray:
        """The positions of ``epoch``: the draws, shuffled (``shuffle``) or in the data's order."""
        rng = epoch_rng(seed, epoch, SAMPLE_STREAM)
        drawn = self.draw(rng)
        return rng.permutation(drawn).astype(np.intp) if shuffle else np.sort(drawn, kind="stable")

    def plan(self, plan: Plan, seed: int, epoch: int) -> Plan:
        """A block plan whose windows hold their rows' draws, mixed (windows drawing none are left out)."""
        rng = epoch_rng(seed, epoch, SAMPLE_STREAM)
        counts = np.bincount(self.draw(rng), minlength=len(self.codes))
        orders, ids, starts = [], [], [0]
        assert plan.windows is not None  # a block plan
        for w, block_ids in enumerate(plan.windows.block_ids):
            lo, hi = int(plan.windows.starts[w]), int(plan.windows.starts[w + 1])
            rows = np.sort(plan.order[lo:hi]).astype(np.intp)  # the window's rows, as it reads them
            local = np.repeat(np.arange(hi - lo, dtype=np.intp), counts[rows])
            if not len(local):
                continue
            local = rng.permutation(local).astype(np.intp)
            orders.append(rows[local])
            ids.append(block_ids)
            starts.append(starts[-1] + len(local))
        empty = np.zeros(0, dtype=np.intp)
        return Plan(np.concatenate(orders) if orders else empty,
                    windows=Windows(np.asarray(starts, dtype=np.int64), ids))


class SampledRows(StageDefaults):
    """The stage of ``Order.sample``: the epoch's draws, shuffled, in the data's order or per window."""

    def __init__(self, sampling: Sampling) -> None:
        self.sampling = sampling

    def plan(self, plan: Plan, key: EpochKey) -> Plan:
        """The draws of the epoch: per window of a block plan, else in place of the rows."""
        if plan.windows is not None:  # each window draws its rows' share
            return self.sampling.plan(plan, key.seed, key.epoch)
        return Plan(self.sampling.order(key.seed, key.epoch, bool(key.shuffle)))

    def epoch_rows(self, rows: int) -> int:
        """The draws of an epoch."""
        return int(self.sampling.epoch_size)


def make_sampling(dataset: Any, view: np.ndarray | None, order: Any, shuffle: bool | str) -> Sampling | None:
    """The :class:`Sampling` of a ``Batches`` view (``None`` without ``order.sample``).

    Parameters
    ----------
    dataset
        The dataset.
    view
        The view's rows (``None``: all rows).
    order
        The :class:`~lstm_data.batching.order.options.Order`.
    shuffle
        The resolved shuffle (block plans index the sorted view's rows).

    Returns
    -------
    Sampling or None
        The draws' probabilities.
    """
    if order.sample is None:
        return None
    if view is None:
        rows = np.arange(len(dataset), dtype=np.intp)
    else:
        rows = np.sort(view) if shuffle == "block" else view
    return Sampling(dataset, rows, order.sample)
