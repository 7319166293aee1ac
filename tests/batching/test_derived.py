"""Derived variables and selections in a BatchSpec: in RAM and on disk, every order, shard and store."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import lstm_data
from lstm_data import BatchSpec, Batches, Order, Ragged, Scalars
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError

N = 500


def jets(n: int = N, seed: int = 5) -> InMemoryDataset:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 9, n)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    values = rng.normal(size=(off[-1], 3)).astype(np.float32)
    scalars = {"jet_pt": rng.uniform(400, 900, n).astype(np.float32),
               "jet.eta": rng.normal(size=n).astype(np.float32),
               "label_a": (rng.random(n) < 0.5).astype(np.float32)}
    scalars["label_b"] = 1 - scalars["label_a"]
    return InMemoryDataset(scalars, {"part": RaggedGroup(["part_px", "part_py", "part_e"], values, off)})


DERIVED = {"part_pt": "np.hypot(part_px, part_py)", "part_rel": "np.log(part_pt / jet_pt)",
           "part_one": "ak.ones_like(part_e)", "label": "argmax(label_a, label_b)",
           "n_part": "ak.num(part_px)", "eta2": "`jet.eta` * 2"}
SELECTION = "(jet_pt > 500) & (n_part > 0)"


def spec(**kw) -> BatchSpec:
    opts = dict(derived=DERIVED, selection=SELECTION)
    opts.update(kw)
    return BatchSpec(inputs={"part": Ragged(["part_rel", "part_px", "part_one"], max_len=6, pad_value=0.0),
                             "jet": Scalars(["jet_pt", "eta2", "n_part"])},
                     targets={"label": Scalars(["label"])}, **opts)


def expected(ds: InMemoryDataset):
    """The selected rows and their derived values, computed here with plain numpy."""
    values, off = ds.ragged("part")
    counts = np.diff(off)
    jet_pt = ds.scalar("jet_pt")
    keep = np.flatnonzero((jet_pt > 500) & (counts > 0))
    pt = np.hypot(values[:, 0], values[:, 1])
    rel = np.log(pt / np.repeat(jet_pt, counts))
    return keep, rel, counts


def test_in_ram_batches_hold_the_selected_rows_and_derived_values():
    ds = jets()
    keep, rel, counts = expected(ds)
    b = Batches(ds, spec(), Order(batch_size=64, shuffle=False))
    assert b.n_rows == len(keep) < N
    assert len(b) == -(-len(keep) // 64)
    inputs, targets, _ = b[0]
    off = ds.ragged("part")[1]
    for i, row in enumerate(keep[:64]):
        n = min(counts[row], 6)
        np.testing.assert_array_equal(inputs["part"][i, :n, 0], rel[off[row]:off[row] + n])
        np.testing.assert_array_equal(inputs["part"][i, :n, 2], 1.0)
        assert (inputs["part"][i, n:] == 0).all()
    np.testing.assert_array_equal(inputs["jet"][:, 0], ds.scalar("jet_pt")[keep[:64]])
    np.testing.assert_array_equal(inputs["jet"][:, 1], ds.scalar("jet.eta")[keep[:64]] * 2)
    np.testing.assert_array_equal(inputs["jet"][:, 2], counts[keep[:64]])
    np.testing.assert_array_equal(targets["label"][:, 0], ds.scalar("label_b")[keep[:64]])


@pytest.fixture(scope="module")
def on_disk(tmp_path_factory):
    path = tmp_path_factory.mktemp("derived") / "jets.h5"
    jets().to_hdf5(path)
    ds = lstm_data.open(path)
    assert not ds.in_ram
    return ds


@pytest.mark.parametrize("shuffle", [False, True, "block"])
def test_on_disk_equals_in_ram_in_every_order(on_disk, shuffle):
    ram = Batches(jets(), spec(), Order(batch_size=50, shuffle=shuffle, seed=3))
    disk = Batches(on_disk, spec(), Order(batch_size=50, shuffle=shuffle, seed=3))
    assert len(ram) == len(disk) and ram.n_rows == disk.n_rows
    seen = []
    for i in range(len(ram)):
        a, b = ram[i], disk[i]
        for part in (0, 1):
            for name in a[part]:
                np.testing.assert_array_equal(a[part][name], b[part][name], err_msg=f"{shuffle} {i} {name}")
        seen.append(b[0]["jet"][:, 0])
    keep = expected(jets())[0]
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.sort(jets().scalar("jet_pt")[keep]))


def test_shards_splits_and_stores_see_only_selected_rows(tmp_path):
    ds = jets()
    keep = expected(ds)[0]
    b = Batches(ds, spec(), Order(batch_size=32, seed=1))
    shards = [b.shard(r, 2) for r in range(2)]
    pts = np.concatenate([sh.batch(i)[0]["jet"][:, 0] for sh in shards for i in range(len(sh))])
    assert len(pts) >= len(keep) - 2 * 32 and set(pts.tolist()) <= set(ds.scalar("jet_pt")[keep].tolist())
    train, val = b.split(0.25)
    assert train.n_rows + val.n_rows == len(keep)
    out = tmp_path / "store.zarr"
    lstm_data.precompute(ds, spec(), out, Order(batch_size=32, shuffle=False), progress=False)
    stored = lstm_data.open_batches(out, permute=False)
    direct = Batches(ds, spec(), Order(batch_size=32, shuffle=False))
    assert len(stored) == len(direct)
    np.testing.assert_array_equal(stored[1][0]["part"], direct[1][0]["part"])


def test_pickled_batches_keep_their_rows_and_split():
    b = Batches(jets(), spec(), Order(batch_size=40, seed=2))
    again = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(again[0][0]["part"], b[0][0]["part"])
    train, val = again.split(0.5)
    assert train.n_rows + val.n_rows == b.n_rows


def test_toml_round_trip(tmp_path):
    s = spec()
    text = s.to_toml()
    assert "[derived]" in text and 'selection = "(jet_pt > 500) & (n_part > 0)"' in text
    path = tmp_path / "spec.toml"
    path.write_text(text)
    back = BatchSpec.from_toml(path)
    assert back == s and back.derived == DERIVED and back.selection == SELECTION
    a = Batches(jets(), back, Order(batch_size=64, shuffle=False))[2]
    b = Batches(jets(), s, Order(batch_size=64, shuffle=False))[2]
    np.testing.assert_array_equal(a[0]["part"], b[0]["part"])
    assert s.replace(nan_to=0.0).derived == DERIVED
    assert BatchSpec(inputs={"j": Scalars(["jet_pt"])}).to_dict().get("derived") is None


def test_variables_are_the_stored_columns_read():
    assert spec().variables == ["part_px", "part_py", "jet_pt", "part_e", "jet.eta", "label_a", "label_b"]


def test_derive_without_anything_returns_the_dataset():
    ds = jets()
    plain = BatchSpec(inputs={"j": Scalars(["jet_pt"])})
    assert plain.derive(ds) is ds
    derived = spec().derive(ds)
    assert spec().derive(derived) is derived  # applied once


@pytest.mark.parametrize("changes, message", [
    (dict(derived={**DERIVED, "x": "np.log(part_ptt)"}), "unknown variable 'part_ptt'; did you mean 'part_pt'"),
    (dict(selection="part_px > 0"), "one value per prong of group 'part'"),
    (dict(derived={**DERIVED, "jet_pt": "label_a * 2"}), "'jet_pt' has the name of a column"),
    (dict(derived={**DERIVED, "jet_pt": "jet_pt * 2"}), "'jet_pt' reads itself"),
    (dict(derived={**DERIVED, "a": "b + 1", "b": "a * 2"}), "loop: a -> b -> a"),
    (dict(derived={**DERIVED, "x": "__import__('os')"}), "'__import__' is not allowed"),
    (dict(selection="jet_pt > 500 and n_part > 0"), "'and'/'or'"),
    (dict(derived={"2x": "jet_pt"}), "not a valid variable name"),
])
def test_errors_name_the_problem(changes, message):
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Batches(jets(), spec(**changes), Order(batch_size=10))


def test_selection_reads_on_disk_in_blocks(on_disk, monkeypatch):
    import lstm_data.batching.spec.derived as derived

    monkeypatch.setattr(derived, "SELECTION_BLOCK", 7)  # many blocks, one partial
    small = Batches(on_disk, spec(), Order(batch_size=50, shuffle=False))
    keep = expected(jets())[0]
    got = np.concatenate([small[i][0]["jet"][:, 0] for i in range(len(small))])
    np.testing.assert_array_equal(got, jets().scalar("jet_pt")[keep])


class _Reading(InMemoryDataset):
    """Jets read as from disk, each read recorded: ``(kind, names)``."""

    def __init__(self, data: InMemoryDataset) -> None:
        super().__init__({s: data.scalar(s) for s in data.scalar_names},
                         {g: RaggedGroup(v, *data.ragged(g)) for g, v in data.groups.items()})
        self.reads: list[tuple[str, tuple[str, ...]]] = []

    @property
    def in_ram(self) -> bool:
        return False

    def scalars_at(self, names, rows):
        self.reads.append(("scalars", tuple(names)))
        return {n: InMemoryDataset._scalar(self, n, np.asarray(rows)) for n in names}

    def _scalar(self, name, rows):
        self.reads.append(("scalar", (name,)))
        return super()._scalar(name, rows)

    def _ragged(self, group, rows):
        self.reads.append(("ragged", (group,)))
        return super()._ragged(group, rows)

    def _offsets(self, group):  # held, as on-disk readers hold them
        return super()._ragged(group, None)[1]


def test_derived_values_read_their_columns_once_per_read():
    base = _Reading(jets())
    derived = {"a": "jet_pt * 2", "b": "a + `jet.eta`", "c": "np.log(b) - a / n_part", "n_part": "num(part_px)",
               "part_rel": "part_px / a", "part_b": "part_rel * b"}
    view = BatchSpec(inputs={"j": Scalars(["c"])}, derived=derived).derive(base)
    base.reads.clear()
    rows = np.array([7, 3, 3, 120])
    got = view.scalars_at(["a", "b", "c", "n_part", "jet_pt"], rows)
    assert base.reads == [("scalars", ("jet_pt", "jet.eta"))]  # one call; num() from the offsets
    base.reads.clear()
    values, _ = view.ragged("part", rows)
    assert base.reads == [("ragged", ("part",)), ("scalars", ("jet_pt", "jet.eta"))]
    ram = BatchSpec(inputs={"j": Scalars(["c"])}, derived=derived).derive(jets())
    for name in ("a", "b", "c", "n_part"):
        np.testing.assert_array_equal(got[name], ram.scalar(name, rows))
    np.testing.assert_array_equal(values, ram.ragged("part", rows)[0])


def test_a_long_chain_of_derived_variables_is_followed_without_recursion():
    derived = {"d0": "jet_pt + 1", **{f"d{i}": f"d{i - 1} + 1" for i in range(1, 3000)}}
    ds = BatchSpec(inputs={"j": Scalars(["d2999"])}, derived=derived).derive(jets())
    want = jets().scalar("jet_pt")
    for _ in range(3000):
        want = want + 1
    np.testing.assert_array_equal(ds.scalar("d2999"), want)
    loop = {**derived, "d0": "d2999 * 2"}
    with pytest.raises(SchemaError, match=r"loop: d0 -> d2999 -> d2998 -> d2997 -> \.\.\. \(2994 more\) -> d2 -> d1 -> d0"):
        BatchSpec(inputs={"j": Scalars(["d5"])}, derived=loop)


def test_a_prong_variable_may_count_another_groups_prongs(tmp_path):
    def two_groups():
        ds = jets()
        counts = np.arange(len(ds)) % 4
        off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        groups = {g: RaggedGroup(v, *ds.ragged(g)) for g, v in ds.groups.items()}
        groups["trk"] = RaggedGroup(["trk_x"], np.ones((int(off[-1]), 1), np.float32), off)
        return InMemoryDataset({s: ds.scalar(s) for s in ds.scalar_names}, groups)

    spec = BatchSpec(inputs={"p": Ragged(["part_share"], max_len=4)},
                     derived={"part_share": "part_px / (num(trk_x) + 1)"})
    values, off = two_groups().ragged("part")
    want = values[:, 0] / (np.repeat(np.arange(N) % 4, np.diff(off)) + 1)
    np.testing.assert_array_equal(spec.derive(two_groups()).ragged("part")[0][:, 3], want)
    two_groups().to_hdf5(tmp_path / "two.h5")
    disk = spec.derive(lstm_data.open(tmp_path / "two.h5"))
    rows = np.array([5, 2, 9])
    got, got_off = disk.ragged("part", rows)
    np.testing.assert_array_equal(got[:, 3], np.concatenate([want[off[r]:off[r + 1]] for r in rows]))


def test_a_derived_dataset_is_freed_with_its_last_reference():
    import gc
    import weakref

    derived = spec().derive(jets())
    gone = weakref.ref(derived)
    del derived
    gc.collect()
    assert gone() is None  # what made it is kept beside it, not holding it


def test_the_block_of_a_freed_derived_group_is_reused_by_the_next_one():
    from lstm_data._util import reuse

    big = jets(100_000, seed=1)  # a group block of several MiB
    plain = BatchSpec(inputs={"part": Ragged(["part_pt", "part_px"], max_len=6)},
                      derived={"part_pt": DERIVED["part_pt"]})
    first = plain.derive(big)
    block = first.ragged("part")[0]
    assert any(np.shares_memory(block, b) for b in reuse._blocks)
    second = plain.derive(jets(100_000, seed=2))
    assert not np.shares_memory(second.ragged("part")[0], block)  # in use: not taken
    del first, block
    third = plain.derive(jets(100_000, seed=3))
    values = third.ragged("part")[0]
    assert any(np.shares_memory(values, b) for b in reuse._blocks)
    ds = jets(100_000, seed=3)
    raw = ds.ragged("part")[0]
    np.testing.assert_array_equal(values[:, :3], raw)
    np.testing.assert_array_equal(values[:, 3], np.hypot(raw[:, 0], raw[:, 1]))
