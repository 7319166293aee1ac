"""The HDF5 layouts people hold open with no options, values bitwise as stored, and
``lstm-data inspect`` names the layout: flat values + counts (h5py, PyTables, awkward dumps),
one group per object, padded arrays with a validity flag (ATLAS dumper, JetNet). Counts and
flags are checked before they are trusted."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError
from lstm_data.cli import main

N = 50


def _counts(seed: int = 1, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 6, n)


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _flat(path, counts, *, counts_name="n_png", prefix="png_"):
    """A hand-written h5py dump: event scalars, a counts dataset, flat float32 prong values."""
    rng = np.random.default_rng(2)
    total = int(counts.sum())
    cols = {f"{prefix}calE": rng.random(total, dtype=np.float32),
            f"{prefix}nhit": rng.integers(0, 90, total).astype(np.float32)}
    with h5py.File(path, "w") as f:
        f["calE"] = rng.random(len(counts), dtype=np.float32)
        f[counts_name] = counts
        for k, v in cols.items():
            f.create_dataset(k, data=v, chunks=(16,), compression="gzip")
    return cols


def _batch_spec(tmp_path, variables, target):
    spec = tmp_path / "spec.toml"
    spec.write_text('version = 2\n[inputs.p]\ntype = "ragged"\nvars = [' + ", ".join(f'"{v}"' for v in variables)
                    + f']\nmax_len = 8\n[targets.t]\ntype = "scalars"\nvars = ["{target}"]\n')
    return lstm_data.BatchSpec.from_toml(spec)


def _first_batch_matches(ds, tmp_path, group, target):
    """A batch of a v2 spec holds every row's prongs as stored (rows in file order)."""
    names = ds.groups[group]
    batches = lstm_data.Batches(ds, _batch_spec(tmp_path, names, target), batch_size=N, shuffle=False)
    inputs, targets, _ = batches[0]
    values, offsets = ds.ragged(group)
    assert inputs["p"].shape == (N, 8, len(names))
    for row in range(N):
        lo, hi = offsets[row], offsets[row + 1]
        n = min(hi - lo, 8)
        assert inputs["p"][row, :n].tobytes() == values[lo:lo + n].astype(np.float32).tobytes()
    assert targets["t"][:, 0].tobytes() == ds.scalar(target).astype(np.float32).tobytes()


# -- flat values + counts --------------------------------------------------------------------------

def test_flat_values_with_counts_open_with_no_options_bitwise(tmp_path, capsys):
    counts = _counts()
    cols = _flat(tmp_path / "flat.h5", counts)
    ds = lstm_data.open(tmp_path / "flat.h5")
    assert ds.groups == {"png": ["png_calE", "png_nhit"]}
    assert ds.scalar_names == ["calE", "n_png"]
    values, offsets = ds.ragged("png")
    assert np.array_equal(offsets, _offsets(counts))
    assert values.dtype == np.float32
    assert values[:, 0].tobytes() == cols["png_calE"].tobytes()
    assert values[:, 1].tobytes() == cols["png_nhit"].tobytes()
    _first_batch_matches(ds, tmp_path, "png", "calE")
    assert main(["inspect", str(tmp_path / "flat.h5"), "--no-stats"]) == 0
    assert "layout: flat values + counts (n_png → png_calE, png_nhit)" in capsys.readouterr().out


@pytest.mark.parametrize("counts_name,prefix,group", [("nJet", "Jet_", "Jet"), ("num_trk", "trk_", "trk"),
                                                      ("hits_counts", "hits.", "hits"), ("png_n", "png_", "png")])
def test_every_counts_spelling_pairs_by_prefix(tmp_path, counts_name, prefix, group):
    counts = _counts(3).astype(np.uint32)
    cols = _flat(tmp_path / "f.h5", counts, counts_name=counts_name, prefix=prefix)
    ds = lstm_data.open(tmp_path / "f.h5")
    assert ds.groups == {group: list(cols)}
    assert counts_name in ds.scalar_names
    assert ds.ragged(group)[0][:, 0].tobytes() == cols[f"{prefix}calE"].tobytes()


def test_awkward_arrays_dumped_as_flat_values_and_counts(tmp_path):
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(4)
    counts = _counts(5)
    jets = ak.unflatten(ak.zip({"pt": rng.random(int(counts.sum())), "eta": rng.normal(size=int(counts.sum()))}),
                        counts)
    with h5py.File(tmp_path / "ak.h5", "w") as f:  # the flat buffers and ak.num, as h5py dumps of awkward do
        f["met"] = rng.random(N)
        f["nJet"] = ak.to_numpy(ak.num(jets))
        f["Jet_pt"] = ak.to_numpy(ak.flatten(jets.pt))
        f["Jet_eta"] = ak.to_numpy(ak.flatten(jets.eta))
    ds = lstm_data.open(tmp_path / "ak.h5")
    values, offsets = ds.ragged("Jet")
    assert ds.groups["Jet"] == ["Jet_eta", "Jet_pt"]  # h5py lists a group's members by name
    assert np.array_equal(offsets, _offsets(counts))
    assert values[:, 0].tobytes() == ak.to_numpy(ak.flatten(jets.eta)).tobytes()
    assert values[:, 1].tobytes() == ak.to_numpy(ak.flatten(jets.pt)).tobytes()
    _first_batch_matches(ds, tmp_path, "Jet", "met")


def _to_buffers(path, array):
    """awkward's documented way to keep an array in HDF5: ak.to_buffers into a group."""
    ak = pytest.importorskip("awkward")
    import json

    with h5py.File(path, "w") as f:
        group = f.create_group("awkward")
        form, length, _ = ak.to_buffers(ak.to_packed(array), container=group)
        group.attrs["form"] = form.to_json()
        group.attrs["length"] = json.dumps(length)


def _events():
    ak = pytest.importorskip("awkward")
    rng = np.random.default_rng(15)
    counts = _counts(16)
    total = int(counts.sum())
    png = ak.unflatten(ak.zip({"calE": rng.random(total, dtype=np.float32),
                               "nhit": rng.integers(0, 40, total).astype(np.float32)}), counts)
    return ak.zip({"trueE": rng.random(N), "png": png}, depth_limit=1), counts


def test_awkward_to_buffers_in_an_hdf5_group(tmp_path, capsys):
    ak = pytest.importorskip("awkward")
    events, counts = _events()
    _to_buffers(tmp_path / "buffers.h5", events)
    ds = lstm_data.open(tmp_path / "buffers.h5")
    assert ds.groups == {"png": ["png_calE", "png_nhit"]} and ds.scalar_names == ["trueE"]
    values, offsets = ds.ragged("png")
    assert np.array_equal(offsets, _offsets(counts))
    assert values[:, 0].tobytes() == ak.to_numpy(ak.flatten(events.png.calE)).tobytes()
    assert values[:, 1].tobytes() == ak.to_numpy(ak.flatten(events.png.nhit)).tobytes()
    _first_batch_matches(ds, tmp_path, "png", "trueE")
    assert main(["inspect", str(tmp_path / "buffers.h5"), "--no-stats"]) == 0
    assert "layout: awkward buffers (ak.to_buffers)" in capsys.readouterr().out


@pytest.mark.parametrize("change,words", [
    (lambda g: g.attrs.__setitem__("length", "1000000000000"), "size of form"),
    (lambda g: g.attrs.__setitem__("length", "-3"), "not a non-negative integer"),
    (lambda g: g.attrs.__setitem__("form", "{no"), "not awkward's JSON"),
    ("offsets", r"stop\[i\] > len\(content\)"),
])
def test_awkward_buffers_are_checked(tmp_path, change, words):
    events, _ = _events()
    path = tmp_path / "buffers.h5"
    _to_buffers(path, events)
    with h5py.File(path, "a") as f:
        group = f["awkward"]
        if change == "offsets":
            key = next(k for k in group if k.endswith("-offsets"))
            offsets = group[key][:]
            offsets[5] = 10**6
            del group[key]
            group[key] = offsets
        else:
            change(group)
    with pytest.raises(FormatError, match=words) as err:
        lstm_data.open(path)
    assert err.value.file == str(path) and err.value.variable == "awkward"


def test_pytables_arrays_as_flat_values_and_counts(tmp_path):
    tables = pytest.importorskip("tables")
    rng = np.random.default_rng(6)
    counts = _counts(7)
    calE = rng.random(int(counts.sum()))
    with tables.open_file(str(tmp_path / "pt.h5"), "w") as f:
        f.create_array("/", "trueE", rng.random(N))
        f.create_array("/", "n_png", counts)
        f.create_earray("/", "png_calE", obj=calE)
    ds = lstm_data.open(tmp_path / "pt.h5")
    assert ds.groups == {"png": ["png_calE"]}
    assert ds.ragged("png")[0][:, 0].tobytes() == calE.tobytes()
    assert ds.layout == "flat values + counts (n_png → png_calE)"
    _first_batch_matches(ds, tmp_path, "png", "trueE")


def test_a_schema_overrides_detection(tmp_path):
    _flat(tmp_path / "flat.h5", _counts())
    ds = lstm_data.open(tmp_path / "flat.h5", schema={"prongs": ["png_nhit", "png_calE"]})
    assert ds.groups == {"prongs": ["png_nhit", "png_calE"]}
    # one prong per event: the counts sum to the event length; the schema keeps a column a scalar
    ones = np.ones(N, dtype=np.int64)
    _flat(tmp_path / "ones.h5", ones)
    assert lstm_data.open(tmp_path / "ones.h5").groups == {"png": ["png_calE", "png_nhit"]}
    kept = lstm_data.open(tmp_path / "ones.h5", schema={"groups": {"png": ["png_calE"]},
                                                          "scalars": ["calE", "png_nhit"]})
    assert kept.groups == {"png": ["png_calE"]} and kept.scalar_names == ["calE", "png_nhit"]


def test_columns_choose_counted_values_without_their_counts(tmp_path):
    cols = _flat(tmp_path / "flat.h5", _counts())
    ds = lstm_data.open(tmp_path / "flat.h5", columns=["png_calE"])
    assert ds.groups == {"png": ["png_calE"]} and ds.scalar_names == []
    assert ds.ragged("png")[0][:, 0].tobytes() == cols["png_calE"].tobytes()
    ds = lstm_data.open(tmp_path / "flat.h5", exclude=["n_png"])
    assert ds.groups == {"png": ["png_calE", "png_nhit"]} and ds.scalar_names == ["calE"]


def test_columns_choose_counted_values_by_their_group(tmp_path):
    cols = _flat(tmp_path / "flat.h5", _counts())
    ds = lstm_data.open(tmp_path / "flat.h5", columns=["png"])  # as png.calE is chosen by "png"
    assert ds.groups == {"png": ["png_calE", "png_nhit"]} and ds.scalar_names == []
    assert ds.ragged("png")[0][:, 1].tobytes() == cols["png_nhit"].tobytes()
    with pytest.raises(lstm_data.SchemaError, match="there are 4 columns: 'calE', 'n_png', 'png_calE'"):
        lstm_data.open(tmp_path / "flat.h5", columns=["zzz"])  # the file's names, not the empty choice


# -- hostile counts ------------------------------------------------------------------------------

def _hostile(path, counts, total):
    with h5py.File(path, "w") as f:
        f["calE"] = np.zeros(len(counts))
        f["n_png"] = counts
        f["png_calE"] = np.zeros(total, dtype=np.float32)


@pytest.mark.parametrize("counts,total,row,words", [
    ([1, 2, -1, 3], 5, 2, "negative count"),
    ([1, 2, 2, 3], 5, 3, "reach 8 values at row 3"),
    ([1, 2, 0, 1], 5, 3, "sum to 4 values"),
    ([2**62, 2**62, 2**62, 2**62 + 5], 5, 0, "declares 4611686018427387904 values"),  # the sum wraps to 5
    (np.array([2**63 + 1, 1, 1, 1], dtype=np.uint64), 5, 0, "more than the 5"),
])
def test_counts_are_checked_before_they_are_trusted(tmp_path, counts, total, row, words):
    path = tmp_path / "bad.h5"
    _hostile(path, np.asarray(counts), total)
    with pytest.raises(FormatError, match=words) as err:
        lstm_data.open(path)
    assert err.value.file == str(path) and err.value.variable == "n_png" and err.value.row == row
    assert "'png_calE'" in str(err.value)


def test_huge_declared_counts_are_refused_in_bounded_memory(tmp_path):
    from tests.bombs import PEAK_LIMIT_MB, run_measured

    path = tmp_path / "bomb.h5"
    counts = np.full(10_000, 2**40, dtype=np.int64)  # 10**16 values declared; 5 stored
    _hostile(path, counts, 5)
    got = run_measured(f"import lstm_data\nlstm_data.open({str(path)!r})")
    assert got["ours"] and got["file"] == str(path), got
    assert "row 0 declares 1099511627776 values, more than the 5" in got["message"]
    assert got["peak_mb"] < PEAK_LIMIT_MB


def test_values_of_another_length_without_counts_say_how_counts_are_named(tmp_path):
    path = tmp_path / "uncounted.h5"
    with h5py.File(path, "w") as f:
        f["calE"] = np.zeros(4)
        f["nHits"] = np.ones(4, dtype=np.int32)  # counts nothing stored: a scalar
        f["png_calE"] = np.zeros(7)
    with pytest.raises(FormatError, match=r"no counts dataset of 4 rows cuts it .*n_X") as err:
        lstm_data.open(path)
    assert err.value.variable == "png_calE"


def test_values_of_one_counts_dataset_must_agree_in_length(tmp_path):
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        f["n_png"] = [1, 2]
        f["png_a"] = np.zeros(3)
        f["png_b"] = np.zeros(4)
    with pytest.raises(FormatError, match="'png_b' has 4 values but 'png_a' has 3") as err:
        lstm_data.open(path)
    assert err.value.variable == "png_b"


# -- one group per object ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["event/n_png", "png/counts"])
def test_one_group_per_object(tmp_path, where, capsys):
    rng = np.random.default_rng(8)
    counts = _counts(9)
    calE, nhit = rng.random(int(counts.sum())), rng.integers(0, 50, int(counts.sum())).astype(np.float64)
    path = tmp_path / "objects.h5"
    with h5py.File(path, "w") as f:
        f["event/calE"] = rng.random(N)
        f["event/trueE"] = rng.random(N)
        f[where] = counts
        f["png/calE"] = calE
        f["png/nhit"] = nhit
    ds = lstm_data.open(path)
    assert ds.groups == {"png": ["png.calE", "png.nhit"]}
    assert set(ds.scalar_names) == {"calE", "trueE"} | ({"n_png"} if where == "event/n_png" else {"png.counts"})
    values, offsets = ds.ragged("png")
    assert np.array_equal(offsets, _offsets(counts))
    assert values[:, 0].tobytes() == calE.tobytes() and values[:, 1].tobytes() == nhit.tobytes()
    _first_batch_matches(ds, tmp_path, "png", "trueE")
    shown = where.replace("event/", "").replace("/", ".")
    assert main(["inspect", str(path), "--no-stats"]) == 0
    assert f"layout: one group per object ({shown} → png.calE, png.nhit)" in capsys.readouterr().out


# -- padded arrays with a validity flag ----------------------------------------------------------

_TRACK = np.dtype([("d0", "<f4"), ("pt", "<f4"), ("nhits", "u1"), ("valid", "?")])


def _atlas(path, lengths, *, hole_row=None):
    """A training-dataset-dumper file: jets (N,) and tracks (N, 40) records with a valid flag."""
    rng = np.random.default_rng(10)
    tracks = np.zeros((len(lengths), 40), dtype=_TRACK)
    for i, n in enumerate(lengths):
        tracks["d0"][i, :n] = rng.normal(size=n)
        tracks["pt"][i, :n] = rng.random(n)
        tracks["nhits"][i, :n] = rng.integers(1, 30, n)
        tracks["valid"][i, :n] = True
    if hole_row is not None:
        tracks["valid"][hole_row, 1] = False
    jets = np.zeros(len(lengths), dtype=[("pt", "<f4"), ("eta", "<f4")])
    jets["pt"] = rng.random(len(lengths))
    with h5py.File(path, "w") as f:
        f.create_dataset("jets", data=jets)
        f.create_dataset("tracks", data=tracks, chunks=(10, 40), compression="lzf")
    return tracks


def test_atlas_tracks_with_a_valid_flag_are_ragged(tmp_path, capsys):
    lengths = _counts(11) * 5 + 3
    tracks = _atlas(tmp_path / "atlas.h5", lengths)
    ds = lstm_data.open(tmp_path / "atlas.h5")
    assert ds.groups == {"tracks": ["tracks.d0", "tracks.pt", "tracks.nhits"]}
    assert ds.scalar_names == ["jets.pt", "jets.eta"]
    values, offsets = ds.ragged("tracks")
    assert np.array_equal(offsets, _offsets(lengths))
    valid = tracks[tracks["valid"]]
    assert values[:, 0].tobytes() == valid["d0"].tobytes()
    assert values[:, 1].tobytes() == valid["pt"].tobytes()
    assert np.array_equal(values[:, 2], valid["nhits"])
    _first_batch_matches(ds, tmp_path, "tracks", "jets.pt")
    assert main(["inspect", str(tmp_path / "atlas.h5"), "--no-stats"]) == 0
    assert "layout: padded arrays + validity flag (tracks flagged by tracks.valid)" in capsys.readouterr().out


def test_a_flag_with_a_hole_is_a_located_error(tmp_path):
    lengths = np.full(N, 4)
    _atlas(tmp_path / "atlas.h5", lengths, hole_row=7)
    with pytest.raises(FormatError, match=r"slot 2 of row 7 of 'tracks' valid after the invalid slot 1") as err:
        lstm_data.open(tmp_path / "atlas.h5")
    assert err.value.file == str(tmp_path / "atlas.h5") and err.value.variable == "tracks.valid"
    assert err.value.row == 7


def _jetnet(lengths):
    rng = np.random.default_rng(12)
    parts = np.zeros((len(lengths), 30, 4), dtype=np.float32)
    for i, n in enumerate(lengths):
        parts[i, :n, :3] = rng.normal(size=(n, 3)).astype(np.float32)
        parts[i, :n, 3] = 1
    return parts


def test_jetnet_particles_with_a_mask_feature(tmp_path):
    lengths = _counts(13) * 6
    parts = _jetnet(lengths)
    with h5py.File(tmp_path / "jetnet.h5", "w") as f:
        f["jet_features"] = np.random.default_rng(0).random((N, 4)).astype(np.float32)
        f["particle_features"] = parts
    ds = lstm_data.open(tmp_path / "jetnet.h5")
    assert ds.groups == {"particle_features": [f"particle_features[{j}]" for j in range(3)]}
    values, offsets = ds.ragged("particle_features")
    assert np.array_equal(offsets, _offsets(lengths))
    assert values.tobytes() == np.ascontiguousarray(parts[parts[..., 3] == 1][:, :3]).tobytes()
    _first_batch_matches(ds, tmp_path, "particle_features", "jet_features[0]")
    assert ds.layout == "padded arrays + validity flag (particle_features flagged by particle_features[3])"


def test_padded_particles_with_a_separate_mask_dataset(tmp_path):
    lengths = _counts(14) * 6
    parts = _jetnet(lengths)
    with h5py.File(tmp_path / "masked.h5", "w") as f:
        f["jet_pt"] = np.random.default_rng(0).random(N)
        f["particles"] = parts[..., :3]
        f["mask"] = parts[..., 3] == 1
    ds = lstm_data.open(tmp_path / "masked.h5")
    assert ds.groups == {"particles": ["particles[0]", "particles[1]", "particles[2]"]}
    assert ds.scalar_names == ["jet_pt"]
    assert ds.ragged("particles")[0].tobytes() == np.ascontiguousarray(parts[parts[..., 3] == 1][:, :3]).tobytes()
    _first_batch_matches(ds, tmp_path, "particles", "jet_pt")


def test_a_declared_mask_with_a_hole_or_other_values_is_a_located_error(tmp_path):
    parts = _jetnet(np.full(N, 5))
    mask = (parts[..., 3] == 1).astype(np.int8)
    mask[3, 0] = 0
    with h5py.File(tmp_path / "hole.h5", "w") as f:
        f["particles"] = parts[..., :3]
        f["particles_mask"] = mask
    with pytest.raises(FormatError, match="row 3") as err:
        lstm_data.open(tmp_path / "hole.h5")
    assert err.value.variable == "particles_mask" and err.value.row == 3
    mask[3, 0] = 2
    with h5py.File(tmp_path / "odd.h5", "w") as f:
        f["particles"] = parts[..., :3]
        f["particles_mask"] = mask
    with pytest.raises(FormatError, match="other than 0 and 1 in row 3"):
        lstm_data.open(tmp_path / "odd.h5")


def test_a_last_feature_that_is_no_mask_stays_scalars(tmp_path):
    parts = _jetnet(np.full(N, 5))
    parts[2, 1, 3] = 0  # a hole: not JetNet's mask, so no padded layout is assumed
    with h5py.File(tmp_path / "plain.h5", "w") as f:
        f["p"] = parts[:, :2, :]
    ds = lstm_data.open(tmp_path / "plain.h5")
    assert ds.groups == {} and "p[1][3]" in ds.scalar_names
    assert ds.layout == "scalars only (no ragged data found)"
