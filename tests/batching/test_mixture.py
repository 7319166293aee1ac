"""The ``mixture`` order policy on real multi-file data: exact per-batch proportions, schedules,
resumption on the same and another world size, per-source epochs, TOML and bad options."""
from __future__ import annotations

import json

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, Order, OptionError
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import make_dataset
from tests.adapters.rows import row_spec, rows_in

#: (file name, rows) of the three sources; row ids run on over the files
FILES = (("nue_a.zarr", 60), ("numu_a.zarr", 100), ("nc_a.zarr", 40))
BOUNDS = np.cumsum([0] + [n for _, n in FILES])
WEIGHTS = {"nue*": 0.5, "numu*": 0.25, "nc*": 0.25}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixture")
    paths = []
    for i, (name, n) in enumerate(FILES):
        base = make_dataset(n, seed=i)
        scalars = {k: base.scalar(k) for k in base.scalar_names}
        scalars["row"] = np.arange(BOUNDS[i], BOUNDS[i + 1], dtype=np.float32)
        scalars["kind"] = np.full(n, 10 + i, dtype=np.float32)
        InMemoryDataset(scalars, {g: base.group(g) for g in base.groups}).to_zarr(folder / name)
        paths.append(str(folder / name))
    return lstm_data.open(paths)


def _batches(data, mixture, **order):
    options = dict(batch_size=8, seed=3, shuffle=True) | order
    return Batches(data, row_spec(), Order(**options, policies={"mixture": mixture}))


def _file_of(rows):
    return np.searchsorted(BOUNDS, rows, side="right") - 1


def _counts(rows):
    return np.bincount(_file_of(rows), minlength=len(FILES))


def _epoch(b, epoch):
    b.set_epoch(epoch)
    return [rows_in(b[i][0]) for i in range(len(b))]


def test_every_batch_holds_the_sources_in_their_proportions(data):
    b = _batches(data, {"weights": WEIGHTS})
    assert len(b) == 15  # nue, the largest weight for its rows: 60 rows at 4 a batch
    for epoch in (0, 1):
        for rows in _epoch(b, epoch):
            np.testing.assert_array_equal(_counts(rows), [4, 2, 2])


def test_inexact_proportions_stay_within_one_row_of_the_ideal(data):
    b = _batches(data, {"weights": {"0": 1, "1": 1, "2": 1}, "epoch_batches": 9})  # files by index
    total = np.zeros(3)
    for step, rows in enumerate(_epoch(b, 0) + _epoch(b, 1)):
        assert len(rows) == 8
        total += _counts(rows)
        assert np.all(np.abs(total - (step + 1) * 8 / 3) < 1)


def test_a_source_column_names_the_sources(data):
    b = _batches(data, {"by": "kind", "weights": {"10": 3, "12": 1}, "epoch_batches": 5})
    for rows in _epoch(b, 0):
        np.testing.assert_array_equal(_counts(rows), [6, 0, 2])


def test_a_schedule_changed_at_step_s_leaves_every_batch_before_s(data):
    fixed = _batches(data, {"weights": WEIGHTS})
    changed = _batches(data, {"schedule": [[0, WEIGHTS], [20, {"numu*": 0.75, "nc*": 0.25}]]})
    before = _epoch(fixed, 0) + _epoch(fixed, 1)
    after = _epoch(changed, 0) + _epoch(changed, 1)
    for step in range(20):
        np.testing.assert_array_equal(after[step], before[step])
    for rows in after[20:]:
        np.testing.assert_array_equal(_counts(rows), [0, 6, 2])
    # the steps of a schedule as tables (the TOML array-of-tables form) are the same schedule
    tables = _batches(data, {"schedule": [{"step": 0, "weights": WEIGHTS},
                                          {"step": 20, "weights": {"numu*": 0.75, "nc*": 0.25}}]})
    for got, want in zip(_epoch(tables, 1), after[15:]):
        np.testing.assert_array_equal(got, want)


def test_no_row_of_a_source_comes_twice_before_all_its_rows_came(data):
    b = _batches(data, {"weights": WEIGHTS})
    served = np.concatenate([r for e in range(4) for r in _epoch(b, e)])  # 60 batches: 4 nue epochs
    for f, (_, n) in enumerate(FILES):
        stream = served[_file_of(served) == f]
        cycles = [stream[i:i + n] for i in range(0, len(stream) - n + 1, n)]
        assert len(cycles) >= 1
        for cycle in cycles:
            np.testing.assert_array_equal(np.sort(cycle), np.arange(BOUNDS[f], BOUNDS[f + 1]))
        assert not np.array_equal(cycles[0], cycles[-1]) or len(cycles) == 1  # reshuffled per source-epoch


def test_stopped_and_resumed_on_the_same_world_serves_the_same_batches(data):
    mixture = {"schedule": [[0, WEIGHTS], [17, {"nue*": 1, "numu*": 3}]]}
    whole = _batches(data, mixture)
    whole.set_epoch(1)
    want = [rows_in(x[0]) for x in whole]
    stopped = _batches(data, mixture)
    stopped.set_epoch(1)
    it = iter(stopped)
    for _ in range(6):
        next(it)
    state = json.loads(json.dumps(stopped.state_dict()))
    resumed = _batches(data, mixture)
    resumed.load_state_dict(state)
    np.testing.assert_array_equal(np.concatenate([rows_in(x[0]) for x in resumed]), np.concatenate(want[6:]))


def test_two_ranks_resumed_on_three_serve_the_remaining_global_batches(data):
    mixture = {"weights": WEIGHTS, "epoch_batches": 10}
    old = [_batches(data, mixture).shard(r, 2) for r in range(2)]
    seen, iters = [], [iter(s) for s in old]
    for _ in range(2):  # 2 steps of 2 ranks: 4 of the 10 global batches
        for s, it in zip(old, iters):
            next(it)
            seen.append(tuple(s.rows_of(s.state_dict()["next_batch"] - 1)))
    state = json.loads(json.dumps(old[1].state_dict()))
    new = [_batches(data, mixture).shard(r, 3) for r in range(3)]
    for s in new:
        s.load_state_dict(state)
    for s in new:
        seen += [tuple(rows_in(x[0])) for x in s]
    full = _batches(data, mixture)
    assert sorted(seen) == sorted(tuple(r) for r in _epoch(full, 0))  # every global batch once
    for rows in seen:
        np.testing.assert_array_equal(_counts(np.asarray(rows)), [4, 2, 2])


def test_bucketing_composes_and_keeps_the_counts(data):
    b = _batches(data, {"weights": WEIGHTS}, bucket_by="input_png3d", bucket_window=3)
    lengths = np.minimum(np.diff(data.offsets("png")), 4)  # capped at the output's max_len
    batches = _epoch(b, 0)
    for rows in batches:
        np.testing.assert_array_equal(_counts(rows), [4, 2, 2])
    for lo in range(0, 15, 3):  # each source's rows of a window are dealt in length order
        for f in range(3):
            spans = sorted((lengths[r].min(), lengths[r].max()) for r in
                           (rows[_file_of(rows) == f] for rows in batches[lo:lo + 3]))
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), (lo, f, spans)


def test_the_order_with_a_mixture_round_trips_through_toml(data, tmp_path):
    mixture = {"schedule": [[0, WEIGHTS], [20, {"numu*": 0.75, "nc*": 0.25}]], "epoch_batches": 12}
    order = Order(batch_size=8, seed=3, shuffle=True, policies={"mixture": mixture})
    path = tmp_path / "order.toml"
    path.write_text(order.to_toml())
    back = Order.from_toml(path)
    assert back == order
    a, b = Batches(data, row_spec(), order), Batches(data, row_spec(), back)
    for x, y in zip(_epoch(a, 1), _epoch(b, 1)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("mixture, key", [
    ({"weights": {"tau*": 1.0}}, "unknown source 'tau\\*'"),
    ({"weights": {"nue*": 0.0, "nc*": 0}}, "policies.mixture.weights: the proportions must sum to a positive"),
    ({"weights": {"nue*": -0.5, "nc*": 1}}, r"policies.mixture.weights\['nue\*'\]"),
    ({"weights": {"nue*": "a lot"}}, r"policies.mixture.weights\['nue\*'\]"),
    ({"schedule": [[0, WEIGHTS], [10, WEIGHTS], [10, WEIGHTS]]}, r"policies.mixture.schedule\[2\].step"),
    ({"schedule": [[5, WEIGHTS]]}, r"policies.mixture.schedule\[0\].step"),
    ({"weights": WEIGHTS, "schedule": [[0, WEIGHTS]]}, "either weights"),
    ({"weights": WEIGHTS, "epoch_batches": 0}, "policies.mixture.epoch_batches"),
    ({"weights": WEIGHTS, "epochs": 3}, "unknown option 'epochs'"),
    ({"weights": {"nue_a.zarr": 1, "nue*": 1}}, "named by two sources"),
    ({"by": "kind", "weights": {"13": 1}}, "unknown source '13'"),
])
def test_bad_options_are_option_errors_naming_the_key(data, mixture, key):
    with pytest.raises(OptionError, match=key):
        _batches(data, mixture)


@pytest.mark.parametrize("order, named", [
    ({"bucket_by": "input_png3d", "max_elements": 64}, "max_elements"),
    ({"shuffle": "block"}, "shuffle='block'"),
])
def test_orders_a_mixture_cannot_keep_are_refused_naming_both(data, order, named):
    with pytest.raises(OptionError, match=f"policies.mixture cannot be combined with {named}"):
        _batches(data, {"weights": WEIGHTS}, **order)


# -- a schedule changed on resume -----------------------------------------------------------------------
LATER = {"numu*": 0.75, "nc*": 0.25}


def _stopped_at(data, mixture, epoch, steps, **order):
    """A state saved after ``steps`` batches of ``epoch``, through JSON as a checkpoint keeps it."""
    b = _batches(data, mixture, **order)
    b.set_epoch(epoch)
    it = iter(b)
    for _ in range(steps):
        next(it)
    return json.loads(json.dumps(b.state_dict()))


def _served(b, epochs):
    """Every batch the next ``epochs`` epochs of ``iter`` serve, by ``(epoch, index)``."""
    out = {}
    for _ in range(epochs):
        start = b.state_dict()["next_batch"] if not out else 0
        for i, batch in enumerate(b, start):
            out[(b.epoch, i)] = rows_in(batch[0])
        b.on_epoch_end()
    return out


@pytest.mark.parametrize("order, kept", [({}, 24), ({"bucket_by": "input_png3d", "bucket_window": 4}, 23)],
                         ids=["plain", "bucketed"])
def test_a_schedule_changed_from_a_step_not_yet_reached_resumes_as_the_new_schedule(data, order, kept):
    """``kept``: steps before it are as before (with bucketing, the window of steps 23 .. 26 holds step 24)."""
    old, n = {"weights": WEIGHTS}, 15
    state = _stopped_at(data, old, 1, 5, **order)  # global step 20 comes next
    new = {"schedule": [[0, WEIGHTS], [24, LATER]]}  # changed at step 24 >= 20
    resumed = _batches(data, new, **order)
    resumed.load_state_dict(state)
    served = _served(resumed, 2)
    fresh, before = _batches(data, new, **order), _batches(data, old, **order)
    assert sorted(served) == [(1, i) for i in range(5, n)] + [(2, i) for i in range(n)]
    for (epoch, i), rows in served.items():
        np.testing.assert_array_equal(rows, rows_in(fresh.batch(i, epoch)[0]))  # the new schedule's batch
        if epoch * n + i < kept:
            np.testing.assert_array_equal(rows, rows_in(before.batch(i, epoch)[0]))  # as before the change
        elif epoch * n + i >= 24:
            np.testing.assert_array_equal(_counts(rows), [0, 6, 2])


def test_bucketing_takes_a_change_from_the_window_holding_it(data):
    order = {"bucket_by": "input_png3d", "bucket_window": 4}
    new = {"schedule": [[0, WEIGHTS], [22, LATER]]}  # in the window of steps 19 .. 22 of epoch 1 (from 15)
    _batches(data, new, **order).load_state_dict(_stopped_at(data, {"weights": WEIGHTS}, 1, 4, **order))
    with pytest.raises(OptionError, match="policies"):  # step 20 is past the window's first step, 19
        _batches(data, new, **order).load_state_dict(_stopped_at(data, {"weights": WEIGHTS}, 1, 5, **order))


def test_a_schedule_changed_before_the_saved_step_is_refused_naming_the_policies(data):
    state = _stopped_at(data, {"weights": WEIGHTS}, 1, 5)
    for changed in ({"schedule": [[0, WEIGHTS], [19, LATER]]}, {"weights": LATER}):
        with pytest.raises(OptionError, match=r"policies: state has .*\(a mixture's schedule: from a step"):
            _batches(data, changed).load_state_dict(state)
    with pytest.raises(OptionError, match="policies"):  # another option than the schedule
        _batches(data, {"weights": WEIGHTS, "epoch_batches": 9}).load_state_dict(state)


def test_shards_take_a_changed_schedule_from_the_next_epoch_on(data):
    old, n = {"weights": WEIGHTS, "epoch_batches": 10}, 10
    saving = _batches(data, old).shard(1, 2)
    saving.set_epoch(1)
    next(iter(saving))
    state = json.loads(json.dumps(saving.state_dict()))  # epoch 1 begun: its deal stays that of the old schedule
    with pytest.raises(OptionError, match="policies"):
        _batches(data, {"schedule": [[0, WEIGHTS], [2 * n - 1, LATER]], "epoch_batches": 10}).shard(0, 2) \
            .load_state_dict(state)
    new = {"schedule": [[0, WEIGHTS], [2 * n, LATER]], "epoch_batches": 10}
    ranks = [_batches(data, new).shard(r, 2) for r in range(2)]
    for s in ranks:
        s.load_state_dict(state)
    fresh = _batches(data, new)
    for s in ranks:
        s.on_epoch_end()
        for i, batch in enumerate(s):
            np.testing.assert_array_equal(rows_in(batch[0]), rows_in(fresh.batch(int(s.parent_indices(2)[i]), 2)[0]))
            np.testing.assert_array_equal(_counts(rows_in(batch[0])), [0, 6, 2])


# -- drawing by elements under a budget --------------------------------------------------------------------
BUDGET = {"bucket_by": "input_png3d", "max_elements": 20, "batch_size": 16}
ELEMENTS = {"weights": WEIGHTS, "unit": "elements", "epoch_batches": 12}


def _served_elements(data):
    return np.minimum(np.diff(data.offsets("png")), 4)  # prongs served: the output's max_len is 4


def test_drawing_by_elements_keeps_every_batch_in_the_budget_and_the_elements_in_proportion(data):
    b = _batches(data, ELEMENTS, **BUDGET)
    served = _served_elements(data)
    assert len(b) == 12
    total = np.zeros(3)
    for epoch in (0, 1):
        b.set_epoch(epoch)
        for i in range(len(b)):
            inputs = b[i][0]
            rows = rows_in(inputs)
            assert 1 <= len(rows) <= 16
            assert len(rows) * inputs["input_png3d"].shape[1] <= 20 or len(rows) == 1  # the budget
            total += np.bincount(_file_of(rows), weights=served[rows], minlength=3)
            # every source's elements within one row (4 prongs) of its proportion of them all
            assert np.all(np.abs(total - np.array([0.5, 0.25, 0.25]) * total.sum()) <= 4), (epoch, i, total)
    rows_share = np.bincount(_file_of(np.concatenate(_epoch(b, 0))), minlength=3)
    assert rows_share.tolist() != (rows_share.sum() * np.array([0.5, 0.25, 0.25])).tolist()  # not by rows


def test_drawing_by_elements_resumes_the_batches_and_a_later_schedule(data):
    state = _stopped_at(data, ELEMENTS, 1, 3, **BUDGET)  # global step 15 comes next
    same = _batches(data, ELEMENTS, **BUDGET)
    same.load_state_dict(state)
    whole = _batches(data, ELEMENTS, **BUDGET)
    for (epoch, i), rows in _served(same, 2).items():
        np.testing.assert_array_equal(rows, rows_in(whole.batch(i, epoch)[0]))
    new = {**ELEMENTS, "weights": None, "schedule": [[0, WEIGHTS], [18, LATER]]}
    del new["weights"]
    resumed = _batches(data, new, **BUDGET)
    resumed.load_state_dict(state)
    fresh = _batches(data, new, **BUDGET)
    for (epoch, i), rows in _served(resumed, 2).items():
        np.testing.assert_array_equal(rows, rows_in(fresh.batch(i, epoch)[0]))
        if epoch * 12 + i < 18:
            np.testing.assert_array_equal(rows, rows_in(whole.batch(i, epoch)[0]))
        else:
            assert not np.any(_file_of(rows) == 0)  # nue has no share from step 18
    with pytest.raises(OptionError, match="policies"):  # changed before the saved step
        _batches(data, {**new, "schedule": [[0, WEIGHTS], [14, LATER]]}, **BUDGET).load_state_dict(state)


@pytest.mark.parametrize("mixture, order, key", [
    ({"weights": WEIGHTS, "unit": "elements"}, {}, r"unit='elements' needs max_elements"),
    ({"weights": WEIGHTS, "unit": "prongs"}, {}, r"policies.mixture.unit must be"),
    ({"weights": WEIGHTS}, BUDGET, r"cannot be combined with max_elements: .*unit='elements'"),
])
def test_the_unit_of_a_mixture_is_checked_naming_it(data, mixture, order, key):
    with pytest.raises(OptionError, match=key):
        _batches(data, mixture, **order)
