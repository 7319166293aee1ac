"""Orders at their edges: file splits through a selection, batch sizes of draws, shards that mix length
classes, refused combinations, and the error types of the order's API."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.epochs.resume import batch_elements
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG3D_VARS, make_dataset
from lstm_data.errors import OptionError
from lstm_data.io.read_options import ReadOptions

ROWS_PER_FILE = 200


@pytest.fixture(scope="module")
def parquet_files(tmp_path_factory):
    """Five real Parquet files of ours; ``evt`` numbers events across them (file = evt // ROWS_PER_FILE)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    d = tmp_path_factory.mktemp("parts")
    paths = []
    for i in range(5):
        rng = np.random.default_rng(i)
        table = pa.table({"evt": np.arange(i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE, dtype=np.int64),
                          "calE": rng.random(ROWS_PER_FILE).astype(np.float32),
                          "nHit": rng.integers(0, 60, ROWS_PER_FILE).astype(np.int32)})
        paths.append(str(d / f"part{i}.parquet"))
        pq.write_table(table, paths[-1])
    return paths


SEL_SPEC = BatchSpec(inputs={"x": Scalars(["calE"]), "evt": Scalars(["evt"])}, selection="nHit > 20")


def _files_of(b):
    evt = np.concatenate([b.batch(i)[0]["evt"][:, 0] for i in range(len(b))]).astype(np.int64)
    return set((evt // ROWS_PER_FILE).tolist())


@pytest.mark.parametrize("in_ram", [True, False])
def test_split_and_folds_by_file_see_the_files_through_a_selection(parquet_files, in_ram):
    ds = lstm_data.open(parquet_files, read=ReadOptions(in_ram=in_ram))
    b = Batches(ds, SEL_SPEC, Order(batch_size=128, seed=1))
    train, val = b.split(2, by="file")
    assert len(_files_of(val)) == 2 and not _files_of(train) & _files_of(val)
    assert _files_of(train) | _files_of(val) == set(range(5))
    folds = b.folds(5, by="file")
    assert [_files_of(v) for _, v in folds] == [{i} for i in range(5)]
    assert b.stats(0)["file_mixing"] is not None


def test_file_structure_survives_pickling_of_selected_in_ram_batches(parquet_files):
    import pickle

    b = Batches(lstm_data.open(parquet_files), SEL_SPEC, Order(batch_size=128, seed=1))
    again = pickle.loads(pickle.dumps(b))  # as a worker process gets it (a shared copy of the data)
    _, val = again.split(by="file", k=5, fold=3)
    assert _files_of(val) == {3}
    assert again.stats(0)["file_mixing"] == b.stats(0)["file_mixing"]


def test_folds_by_file_with_more_folds_than_files_is_refused(parquet_files):
    b = Batches(lstm_data.open(parquet_files), BatchSpec(inputs={"x": Scalars(["calE"])}), Order(seed=1))
    with pytest.raises(OptionError, match=r"k=6 .*5 files|k=6.*has 5"):
        b.folds(6, by="file")
    with pytest.raises(OptionError, match="k=6"):
        b.split(by="file", k=6, fold=0)


@pytest.mark.parametrize("epoch_size,batch_size,shuffle", [(8000, 500, True), (1001, 250, True),
                                                          (1001, 250, "block"), (8000, 500, "block")])
def test_batch_sizes_follow_the_draws(numu, epoch_size, batch_size, shuffle):
    b = Batches(numu, BatchSpec(inputs={"x": Scalars(["calE"])}),
                Order(batch_size=batch_size, seed=1, shuffle=shuffle,
                      sample={"classes": "lowGain", "epoch_size": epoch_size}))
    for epoch in (0, 1):
        sizes = b.batch_sizes(epoch)
        assert sizes.tolist() == [len(b.rows_of(i, epoch)) for i in range(len(b))]
        assert sizes.sum() == epoch_size and sizes.min() > 0


def test_budget_shards_mix_length_classes_over_epochs_and_stay_balanced(numu):
    spec = BatchSpec(inputs={"png": Ragged(["png.calE"], max_len=20)})
    b = Batches(numu, spec, Order(batch_size=256, seed=1, bucket_by="png", max_elements=1024))
    lengths = np.diff(numu.offsets("png"))
    length_class = np.digitize(lengths, [3, 5, 8, 12])  # 0-2, 3-4, 5-7, 8-11, 12+ prongs
    seen = [set(), set()]
    totals = []
    for epoch in range(4):
        costs = batch_elements(b, epoch)
        lanes = [b.shard(r, 2).parent_indices(epoch) for r in range(2)]
        for r in range(2):
            rows = np.concatenate([b.rows_of(i, epoch) for i in lanes[r]])
            seen[r] |= set(length_class[rows].tolist())
        # per step: the two batches of a step are of about the same size (sorted rounds)
        step_max = np.maximum(costs[lanes[0]], costs[lanes[1]]).sum()
        assert step_max / (costs[np.concatenate(lanes)].sum() / 2) < 1.05
        per_rank = np.array([costs[lane].sum() for lane in lanes])
        assert (per_rank.max() - per_rank.min()) / per_rank.mean() < 0.05
        totals.append(tuple(per_rank))
    assert seen[0] == seen[1] == set(range(5))
    assert len(set(totals)) > 1  # the ranks' element totals change with the epoch


def test_precompute_refuses_sample(numu, tmp_path):
    from lstm_data.store.write import precompute

    with pytest.raises(OptionError, match="sample"):
        precompute(numu, BatchSpec(inputs={"x": Scalars(["calE"])}), tmp_path / "s.zarr",
                   Order(batch_size=500, seed=1, sample={"classes": "lowGain"}), progress=False)
    assert not (tmp_path / "s.zarr").exists()


COMBINATIONS = [
    ({"sample": {"classes": "lowGain"}, "bucket_by": "png", "max_elements": 1024}, ("sample", "max_elements")),
    ({"sample": {"classes": "lowGain"}, "cache": "ram"}, ("sample", "cache")),
    ({"bucket_lengths": [4, 8]}, ("bucket_lengths", "bucket_by")),
    ({"max_elements": 1024}, ("max_elements", "bucket_by")),
    ({"bucket_by": "png", "max_elements": 1024, "drop_last": True}, ("drop_last", "max_elements")),
]


@pytest.mark.parametrize("options,names", COMBINATIONS)
def test_combinations_are_refused_when_the_order_is_made_and_read(options, names, tmp_path):
    with pytest.raises(OptionError) as made:
        Order(batch_size=64, seed=1, **options)
    assert all(n in str(made.value) for n in names)
    with pytest.raises(OptionError) as replaced:
        Order(batch_size=64, seed=1).replace(**options)
    assert str(replaced.value) == str(made.value)
    path = tmp_path / "order.toml"
    from lstm_data._util.declared import toml_text

    path.write_text(toml_text({"order": {"batch_size": 64, **options}}))
    with pytest.raises(OptionError) as read:
        Order.from_toml(path)
    assert str(read.value) == f"{path} [order]: {made.value}"  # the same, naming the file


def test_order_api_errors_are_option_errors(numu):
    spec = BatchSpec(inputs={"png": Ragged(["png.calE"], max_len=20)})
    with pytest.raises(OptionError, match="bucket_by must name a Ragged output"):
        Batches(numu, spec, Order(seed=1, bucket_by="input_png"))
    b = Batches(numu, spec, Order(batch_size=500, seed=1))
    other = Batches(numu, spec, Order(batch_size=250, seed=1))
    with pytest.raises(OptionError, match="state saved by another batch sequence"):
        other.load_state_dict(b.state_dict())
    with pytest.raises(OptionError, match="state saved by another batch sequence"):
        other.shard(0, 2).load_state_dict(b.shard(0, 2).state_dict())
    with pytest.raises(OptionError, match="not a batch sequence state"):
        b.load_state_dict({"epoch": 0})
    with pytest.raises(OptionError, match=r"by='key' needs key=<a scalar column>"):
        b.split(0.2, by="key")
    one = Batches(numu, spec, Order(seed=1))
    with pytest.raises(OptionError, match="this is an InMemoryDataset"):
        one.split(0.2, by="file")


def test_torch_nested_without_a_packed_input_is_an_option_error():
    pytest.importorskip("torch")
    from lstm_data.torch import TorchBatches

    ds = make_dataset(64, seed=1)
    b = Batches(ds, BatchSpec(inputs={"png": Ragged(PNG3D_VARS[:2], max_len=8)}), Order(batch_size=16, seed=1))
    with pytest.raises(OptionError, match="no packed input"):
        TorchBatches(b, nested=True)
    assert isinstance(InMemoryDataset, type)


@pytest.mark.parametrize("in_ram", [True, False])
def test_derived_data_carries_no_state_of_its_derivation(parquet_files, in_ram):
    """What a derivation knows (what was applied, the selected rows of each file) is kept beside the
    derived data and carried by the batches' view, never set on the dataset objects."""
    from lstm_data.batching.spec.derived import file_bounds

    ds = lstm_data.open(parquet_files, read=ReadOptions(in_ram=in_ram))
    derived = SEL_SPEC.derive(ds)
    assert {"derived_key", "part_bounds"}.isdisjoint(vars(derived))
    made = SEL_SPEC.derivation(ds)
    assert SEL_SPEC.derive(derived) is derived  # applied once
    bounds = file_bounds(derived)
    assert bounds is not None and len(bounds) == 6 and bounds[-1] == len(derived)
    np.testing.assert_array_equal(made.bounds, bounds)
    b = Batches(ds, SEL_SPEC, Order(batch_size=128, seed=1))
    np.testing.assert_array_equal(b.file_bounds, bounds)
    assert {"derived_key", "part_bounds"}.isdisjoint(vars(b.pipeline.dataset))
