"""One grouping rule for list columns in every reader: equal lengths and a common prefix make a group.

The files are written as the public jet datasets' conversion scripts write them: Parquet
with ``ak.to_parquet`` of a record of flat ``part_*`` list columns (each a
``large_list<float>`` with its own offsets, as the QuarkGluon and TopLandscape
conversions do), and the same data as ROOT: a TTree whose jagged branches share no counter
(uproot's ``mktree`` gives each its own, ``npart_px``) and what ``file["tree"] = {...}`` writes
(with uproot 5.7, an RNTuple of ``std::vector`` fields).
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged
from lstm_data.errors import SchemaError
from lstm_data.io.columns.groups import common_prefix, settle

ak = pytest.importorskip("awkward")
pytest.importorskip("yaml")

PART = ["part_px", "part_py", "part_pz", "part_energy", "part_deta", "part_dphi"]
LENGTH = 8

CONFIG = f"""
new_variables:
  part_pt: np.hypot(part_px, part_py)
  part_mask: ak.ones_like(part_deta)
  jet_isQ: label
  jet_isG: 1 - label
inputs:
  pf_features:
    length: {LENGTH}
    pad_mode: constant
    vars:
      - [part_pt, null]
      - [part_px, null]
      - [part_deta, null]
  pf_mask:
    length: {LENGTH}
    pad_mode: constant
    vars:
      - [part_mask, null]
labels:
  type: simple
  value: [jet_isQ, jet_isG]
observers:
  - jet_pt
"""


def jets(n: int = 90, seed: int = 0, counts: np.ndarray | None = None) -> dict[str, object]:
    """QuarkGluon-like jets: flat float32 ``part_*`` lists of one length per jet, ``label``, ``jet_pt``."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(5, n) if counts is None else counts
    counts[::17] = 0  # jets without particles too
    cols: dict[str, object] = {v: ak.unflatten(rng.normal(size=int(counts.sum())).astype(np.float32), counts)
                               for v in PART}
    cols["label"] = rng.integers(0, 2, len(counts)).astype(np.float64)
    cols["jet_pt"] = rng.uniform(500, 1000, len(counts)).astype(np.float32)
    return cols


def write_parquet(path, cols, row_group_size=None):
    """As the public conversion scripts write: ``ak.to_parquet`` of a record of the flat columns."""
    ak.to_parquet(ak.zip(cols, depth_limit=1), path, **({"row_group_size": row_group_size}
                                                        if row_group_size else {}))
    return path


def write_root(path, cols, parts=1):
    """The same columns as a TTree written by uproot: each jagged branch has a counter of its own
    (``npart_px``), shared by no other branch; ``parts`` baskets (clusters) per branch."""
    uproot = pytest.importorskip("uproot")
    cuts = np.linspace(0, len(cols["label"]), parts + 1).astype(int)
    with uproot.recreate(path) as fh:
        types = {k: v.type.content if isinstance(v, ak.Array) else v.dtype for k, v in cols.items()}
        tree = fh.mktree("tree", types)
        for a, z in zip(cuts[:-1], cuts[1:]):
            tree.extend({k: v[a:z] for k, v in cols.items()})
    return path


def write_dict(path, cols):
    """``file["tree"] = {...}`` of the jagged arrays: uproot 5.7 writes an RNTuple of ``std::vector``
    fields (older versions a TTree)."""
    uproot = pytest.importorskip("uproot")
    with uproot.recreate(path) as fh:
        fh["tree"] = cols
    return path


WRITERS = {"parquet": (write_parquet, "jets.parquet"), "root": (write_root, "jets.root"),
           "root-dict": (write_dict, "dict.root")}


def reference(cols) -> dict[str, np.ndarray]:
    """weaver's tensors for CONFIG, padded by hand with numpy."""
    px, py, deta = (ak.to_list(cols[v]) for v in ("part_px", "part_py", "part_deta"))
    n = len(px)
    features = np.zeros((n, 3, LENGTH), np.float32)
    mask = np.zeros((n, 1, LENGTH), np.float32)
    for i in range(n):
        k = min(len(px[i]), LENGTH)
        x, y = np.float32(px[i][:k]), np.float32(py[i][:k])
        features[i, 0, :k] = np.hypot(x, y)
        features[i, 1, :k] = x
        features[i, 2, :k] = np.float32(deta[i][:k])
        mask[i, 0, :k] = 1
    label = (np.asarray(cols["label"]) == 0).astype(np.int64)  # argmax(jet_isQ, jet_isG): 1 for a gluon
    return {"pf_features": features, "pf_mask": mask, "_label_": label,
            "jet_pt": np.asarray(cols["jet_pt"], np.float64)}


def same_groups(ds, want) -> bool:
    """The groups ``want`` (variables in any order: uproot writes branches in its own order)."""
    return {g: sorted(v) for g, v in ds.groups.items()} == {g: sorted(v) for g, v in want.items()}


def every_batch(ds, spec, batch_size=32):
    b = Batches(ds, spec, Order(batch_size=batch_size, shuffle=False))
    parts = [b[i] for i in range(len(b))]
    inputs = {k: np.concatenate([p[0][k] for p in parts]) for k in parts[0][0]}
    targets = {k: np.concatenate([p[1][k] for p in parts]) for k in parts[0][1]}
    return inputs, targets


@pytest.mark.parametrize("fmt", list(WRITERS))
@pytest.mark.parametrize("in_ram", [None, False])
def test_public_layouts_form_one_group_and_batch_as_weaver(tmp_path, fmt, in_ram):
    """The acceptance: default open, one group ``part``, from_weaver batches equal to numpy's."""
    cols = jets()
    write, name = WRITERS[fmt]
    path = write(tmp_path / name, cols)
    ds = lstm_data.open(path) if in_ram is None else lstm_data.open(path, in_ram=False)
    assert ds.in_ram is (in_ram is None)
    assert same_groups(ds, {"part": PART}) and {"label", "jet_pt"} <= set(ds.scalar_names)
    spec = BatchSpec.from_weaver(_config(tmp_path))
    inputs, targets = every_batch(ds, spec)
    want = reference(cols)
    for k in ("pf_features", "pf_mask"):
        assert inputs[k].dtype == np.float32 and inputs[k].shape == want[k].shape, k
        assert inputs[k].tobytes() == want[k].tobytes(), k
    np.testing.assert_array_equal(np.ravel(targets["_label_"]), want["_label_"])
    np.testing.assert_array_equal(np.ravel(targets["jet_pt"]), want["jet_pt"])


def _config(tmp_path):
    path = tmp_path / "qg.yaml"
    path.write_text(CONFIG)
    return path


def test_every_reader_groups_alike(tmp_path):
    """Parquet (in RAM, on disk, many row groups), Arrow, awkward and ROOT give the same groups."""
    from lstm_data.io.parquet import from_arrow, read_parquet

    pa = pytest.importorskip("pyarrow")
    cols = jets(200, seed=3)
    cols["part_trk_d0"] = ak.unflatten(np.ones(400, np.float32), np.full(200, 2))  # another count
    path = write_parquet(tmp_path / "j.parquet", cols, row_group_size=40)
    root = write_root(tmp_path / "j.root", cols, parts=5)
    want = {"part": PART, "part_trk_d0": ["part_trk_d0"]}
    table = pa.parquet.read_table(path)
    for ds in (read_parquet(path, in_ram=True), read_parquet(path, in_ram=False), from_arrow(table),
               lstm_data.from_awkward(ak.zip(cols, depth_limit=1)), lstm_data.open(root),
               lstm_data.open(root, in_ram=False), lstm_data.open(write_dict(tmp_path / "d.root", cols))):
        assert same_groups(ds, want)
        np.testing.assert_array_equal(np.diff(ds.offsets("part")), ak.num(cols["part_px"]).to_numpy())
    lazy = lstm_data.open(root, in_ram=False, block_bytes=2000)  # many chunks, grouped over all of them
    again = pickle.loads(pickle.dumps(lazy))
    assert again.groups == lazy.groups and lazy.n_chunks > 2
    for g in lazy.groups:
        assert again.ragged(g)[0].tobytes() == lstm_data.open(root).ragged(g)[0].tobytes()


def test_root_on_demand_groups_over_the_whole_tree(tmp_path):
    """Counts that differ only in the last cluster: read on demand, chunk by chunk, the groups are
    those of the whole read (not a chunk's own), and every chunk is read as them."""
    cols = jets(200, seed=6)
    counts = ak.num(cols["part_dphi"]).to_numpy().copy()
    counts[190] += 1
    cols["part_dphi"] = ak.unflatten(np.zeros(int(counts.sum()), np.float32), counts)
    root = write_root(tmp_path / "late.root", cols, parts=5)
    whole, lazy = lstm_data.open(root), lstm_data.open(root, in_ram=False, block_bytes=2000)
    assert lazy.n_chunks > 2 and lazy.groups == whole.groups and "part_dphi" in whole.groups
    for g in whole.groups:
        assert lazy.ragged(g, np.arange(200))[0].tobytes() == whole.ragged(g)[0].tobytes()


def test_unequal_counts_stay_apart_and_padded_each_by_its_own(tmp_path):
    """Columns of unequal counts are separate groups; a Ragged field over both pads each by its own
    counts (its lengths: its first variable's group), and what needs one count per row (arithmetic,
    a packed layout) names the first differing row."""
    cols = jets(60, seed=1)
    counts = ak.num(cols["part_deta"]).to_numpy().copy()
    counts[[7, 9]] += [1, 2]  # rows 7 and 9 differ: 7 is the first
    cols["part_deta"] = ak.unflatten(np.zeros(int(counts.sum()), np.float32), counts)
    for path in (write_parquet(tmp_path / "u.parquet", cols), write_root(tmp_path / "u.root", cols),
                 write_dict(tmp_path / "d.root", cols)):
        ds = lstm_data.open(path)
        assert same_groups(ds, {"part": [v for v in PART if v != "part_deta"], "part_deta": ["part_deta"]})
        row = rf"'part' has {counts[7] - 1} and 'part_deta' has {counts[7]} in row 7\)"
        with pytest.raises(SchemaError, match=r"mixes prong variables of groups 'part' and 'part_deta' "
                                              r"\(different prong counts per row: " + row):
            Batches(ds, BatchSpec(inputs={"x": Ragged(["r"])}, derived={"r": "np.hypot(part_px, part_deta)"}),
                    Order(batch_size=8))
        with pytest.raises(SchemaError, match=r"input 'x': with layout='packed' .* one group .* got group 'part': "
                                              r"'part_px'; group 'part_deta': 'part_deta' \(different prong "
                                              r"counts per row: " + row):
            Batches(ds, BatchSpec(inputs={"x": Ragged(["part_px", "part_deta"], layout="packed")}),
                    Order(batch_size=8))
        # padded, each variable by its own count (weaver-core's rule); lengths are part_px's
        spec = BatchSpec(inputs={"x": Ragged(["part_deta", "part_px"], max_len=LENGTH, lengths=True)})
        inputs, _ = every_batch(ds, spec, batch_size=16)
        want = own_counts([cols["part_deta"], cols["part_px"]], LENGTH)
        assert inputs["x"].tobytes() == want.tobytes()
        np.testing.assert_array_equal(inputs["x_lengths"], np.minimum(counts, LENGTH))


def own_counts(variables, width, pad=0.0):
    """``(rows, width, len(variables))`` float32: each variable padded (or cut) by its own count."""
    out = np.full((len(variables[0]), width, len(variables)), pad, np.float32)
    for j, var in enumerate(variables):
        for i, row in enumerate(ak.to_list(var)):
            out[i, :min(len(row), width), j] = np.float32(row[:width])
    return out


def test_a_schema_overrides_either_way(tmp_path):
    cols = jets(50, seed=2)
    path = write_parquet(tmp_path / "s.parquet", cols)
    apart = lstm_data.open(path, schema={"groups": {"px": ["part_px"], "deta": ["part_deta"]}})
    assert apart.groups == {"px": ["part_px"], "deta": ["part_deta"],  # the rest as the rule says
                            "part": ["part_py", "part_pz", "part_energy", "part_dphi"]}
    with pytest.raises(SchemaError, match=r"groups 'px' and 'deta' \(their prong counts are equal in every "
                                          r"row, but they were read as separate groups"):
        Batches(apart, BatchSpec(inputs={"x": Ragged(["r"])}, derived={"r": "part_px * part_deta"}),
                Order(batch_size=8))
    counts = ak.num(cols["part_dphi"]).to_numpy().copy()
    counts[4] += 1
    cols["part_dphi"] = ak.unflatten(np.zeros(int(counts.sum()), np.float32), counts)
    bad = write_parquet(tmp_path / "bad.parquet", cols)
    with pytest.raises(SchemaError, match=r"group 'part': 'part_dphi' has \d+ values but 'part_px' has \d+ "
                                          r"in row 4") as info:
        lstm_data.open(bad, schema={"groups": {"part": "part_*"}})
    assert (info.value.file, info.value.row) == (str(bad), 4)


def test_a_later_file_with_other_counts_names_file_columns_and_row(tmp_path):
    """Grouped by the first rows (and the metadata, which agrees here): a later file where the
    counts differ is an error naming that file, both columns and the row, in RAM or on disk."""
    first = jets(40, seed=4, counts=np.full(40, 3))
    later = jets(40, seed=5, counts=np.full(40, 3))
    counts = ak.num(later["part_px"]).to_numpy().copy()
    counts[[11, 12]] = [2, 4]  # the same total and no empty list more: the metadata cannot tell
    later["part_dphi"] = ak.unflatten(np.zeros(int(counts.sum()), np.float32), counts)
    folder = tmp_path / "many"
    folder.mkdir()
    write_parquet(folder / "a.parquet", first)
    write_parquet(folder / "b.parquet", later)
    message = r"'part_dphi' has 2 values but 'part_px' has 3 in row 11; 'part_px', 'part_py', 'part_pz' " \
              r"and 3 more were read as one group because their lengths are equal in rows 0-39 of .*a.parquet"
    with pytest.raises(SchemaError, match=message) as info:
        lstm_data.open(folder, in_ram=True)
    assert (info.value.file, info.value.row, info.value.variable) == (str(folder / "b.parquet"), 11, "part_dphi")
    disk = lstm_data.open(folder, in_ram=False)
    disk.ragged("part", np.arange(40))  # the first file: fine
    with pytest.raises(SchemaError, match=message):
        disk.ragged("part", np.arange(40, 80))
    roots = [write_root(tmp_path / "a.root", first), write_root(tmp_path / "b.root", later)]
    with pytest.raises(SchemaError, match=r"'part_\w+' and 'part_dphi' are one group \('part'\) in .*a.root but "
                                          r"two \('part', 'part_dphi'\) here: different prong counts per row: "
                                          r"'part' has 3 and 'part_dphi' has 2 in row 11") as info:
        lstm_data.open(roots)
    assert info.value.file == str(roots[1])


@pytest.mark.parametrize("names, prefix", [
    (["part_px", "part_py", "part_deta"], "part"),
    (["jet_part_px", "jet_part_py"], "jet_part"),
    (["png.calE", "png.nhit", "png.dir.x"], "png"),
    (["Muon_pt", "Electron_pt"], ""),
    (["part", "partial"], ""),
    (["a.b_x", "a.c_y"], "a"),
])
def test_common_prefix(names, prefix):
    assert common_prefix(names) == prefix


def test_settle_names_groups_by_common_prefix_else_by_bucket_or_column():
    one, two = np.array([1, 2, 0]), np.array([2, 2, 0])
    assert settle("part", {"part_px": one, "part_py": one.copy(), "part_deta": one}) == {
        "part": ["part_px", "part_py", "part_deta"]}
    assert settle("Jet", {"Jet_e": one, "Jet_pt": two}) == {"Jet": ["Jet_e"], "Jet_pt": ["Jet_pt"]}
    assert settle("Jet", {"Jet_e": one, "Jet_pt": two, "Jet_eta": two}) == {  # several columns come first
        "Jet_e": ["Jet_e"], "Jet": ["Jet_pt", "Jet_eta"]}
    assert settle("jet", {"jet_part_px": one, "jet_part_py": one, "jet_sv_x": two, "jet_sv_y": two}) == {
        "jet_part": ["jet_part_px", "jet_part_py"], "jet_sv": ["jet_sv_x", "jet_sv_y"]}
    assert settle("p", {"p[0]": one, "p[1]": one}) == {"p": ["p[0]", "p[1]"]}  # one array's elements
    assert settle("Muon", {"Muon_p_x": one, "Muon_p_y": one}, keep=True) == {"Muon": ["Muon_p_x", "Muon_p_y"]}
    assert settle("jet", {"jet_part_px": one, "jet_part_py": one}, taken={"jet_part"}) == {
        "jet_part_px": ["jet_part_px", "jet_part_py"]}  # a name taken by a scalar: the first column's
