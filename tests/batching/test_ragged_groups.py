"""A Ragged field whose variables lie in groups of unequal counts per row (weaver-core's rule):
each group's variables padded by that group's own counts into one output, in RAM, on disk and
over several files; its width follows the longest count of any group, its lengths (mask,
bucketing, budgets) its first variable's group. Written as the public jet conversions write:
``ak.to_parquet`` of flat list columns, each with its own offsets."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged
from lstm_data.batching.spec.fields import Standardize
from lstm_data.errors import SchemaError
from tests.helpers import assert_bitwise

ak = pytest.importorskip("awkward")
pytest.importorskip("pyarrow")

N = 120


def columns(n: int = N, seed: int = 0) -> dict[str, object]:
    """Groups of other counts: ``part_*`` (px, py), ``trk_*`` (d0, with NaNs) and ``sv_*`` (mass)."""
    rng = np.random.default_rng(seed)
    out: dict[str, object] = {}
    for names, mean in ((["part_px", "part_py"], 5), (["trk_d0"], 8), (["sv_mass"], 2)):
        counts = rng.poisson(mean, n)
        counts[::13] = 0
        for name in names:
            flat = rng.normal(size=int(counts.sum())).astype(np.float32)
            if name == "trk_d0":
                flat[::11] = np.nan
            out[name] = ak.unflatten(flat, counts)
    out["label"] = rng.integers(0, 2, n).astype(np.float32)
    return out


def write(path, cols):
    ak.to_parquet(ak.zip(cols, depth_limit=1), path)
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("groups")
    cols = columns()
    path = write(folder / "all.parquet", cols)
    many = folder / "many"
    many.mkdir()
    for k, (a, z) in enumerate(((0, 50), (50, 51), (51, N))):
        write(many / f"{k}.parquet", {name: c[a:z] for name, c in cols.items()})
    return cols, path, many


def own_counts(cols, names, rows, width, pad=0.0, padding="post"):
    """NumPy reference: ``(B, width, V)`` float32, each variable padded or cut by its own count."""
    out = np.full((len(rows), width, len(names)), pad, np.float32)
    for j, name in enumerate(names):
        lists = ak.to_list(cols[name])
        for b, r in enumerate(rows):
            row = np.asarray(lists[r][:width], np.float32)
            at = width - len(row) if padding == "pre" else 0
            out[b, at:at + len(row), j] = row
    return out


def counts(cols, name, rows):
    return ak.num(cols[name]).to_numpy()[rows]


def batches(ds, spec, **order):
    b = Batches(ds, spec, Order(**{"batch_size": 16, "shuffle": False, **order}))
    return b, [b[i][:2] for i in range(len(b))]  # (inputs, targets) of each


VARS = ["trk_d0", "part_px", "sv_mass", "part_py"]  # groups interleaved: trk, part, sv, part


@pytest.mark.parametrize("where", ["ram", "disk", "many", "many_disk"])
def test_each_group_is_padded_by_its_own_counts(data, where):
    cols, path, many = data
    source = many if where.startswith("many") else path
    ds = lstm_data.open(source, in_ram=not where.endswith("disk"))
    assert set(ds.groups) == {"part", "trk", "sv"}
    spec = BatchSpec(inputs={"x": Ragged(VARS, lengths=True, mask=True)})
    b, built = batches(ds, spec, shuffle=True, seed=3)
    for i, (inputs, _) in enumerate(built):
        rows = b.rows_of(i)
        width = max(int(counts(cols, v, rows).max()) for v in VARS)
        assert_bitwise(inputs["x"], own_counts(cols, VARS, rows, width), f"batch {i}")
        first = counts(cols, "trk_d0", rows)  # the lengths and mask: the first variable's group
        np.testing.assert_array_equal(inputs["x_lengths"], first)
        np.testing.assert_array_equal(inputs["x_mask"], np.arange(width)[None, :] < first[:, None])


def test_forms_max_len_and_nan_to_per_group(data):
    """Fixed width (longer rows cut by their own counts), pre-padding, channels-first, wrap,
    standardize and per-variable pad values: each as for one group, column by column."""
    cols, path, _ = data
    ds = lstm_data.open(path)
    rows = np.arange(N)
    std = {"part_px": Standardize(center=1.0, scale=2.0), "sv_mass": Standardize(pad_value=-5.0)}
    spec = BatchSpec(inputs={"x": Ragged(VARS, max_len=6, padding="pre", truncating="post", pad_value=-1.0,
                                         standardize=std, layout="channels_first")}, nan_to=7.0)
    got = np.concatenate([x["x"] for x, _ in batches(ds, spec)[1]])
    want = own_counts(cols, VARS, rows, 6, pad=-1.0, padding="pre")
    want[..., 1] = np.where(want[..., 1] == -1.0, -1.0, (want[..., 1] - np.float32(1)) * np.float32(2))
    real = own_counts(cols, ["sv_mass"], rows, 6, pad=np.nan, padding="pre")[..., 0]
    want[..., 2] = np.where(np.isnan(real), -5.0, real)
    want = np.where(np.isnan(want), np.float32(7), want)
    assert_bitwise(got, np.ascontiguousarray(want.transpose(0, 2, 1)))
    wrap = BatchSpec(inputs={"x": Ragged(["sv_mass", "part_px"], max_len=5, pad_mode="wrap")})
    got = np.concatenate([x["x"] for x, _ in batches(ds, wrap)[1]])
    for j, name in enumerate(["sv_mass", "part_px"]):
        for r, row in enumerate(ak.to_list(cols[name])):
            want_row = [row[k % len(row)] for k in range(5)] if row else [0.0] * 5
            assert got[r, :, j].tolist() == np.float32(want_row).tolist(), (name, r)


def test_bucketing_and_budgets_use_the_first_groups_lengths(data):
    """Batches sorted by the field's lengths (its first group), a budget and chosen bucket lengths:
    every row's values kept, the width never below the longest count of any group."""
    cols, path, _ = data
    ds = lstm_data.open(path)
    spec = BatchSpec(inputs={"x": Ragged(["part_px", "trk_d0"], lengths=True)})
    for order in (dict(bucket_by="x", bucket_lengths="auto", max_shapes=3),
                  dict(bucket_by="x", max_elements=400, batch_size=40)):
        b, built = batches(ds, spec, shuffle=True, seed=1, **order)
        seen = []
        for i, (inputs, _) in enumerate(built):
            rows = b.rows_of(i)
            width = inputs["x"].shape[1]
            assert width >= max(int(counts(cols, v, rows).max()) for v in ("part_px", "trk_d0"))
            assert_bitwise(inputs["x"], own_counts(cols, ["part_px", "trk_d0"], rows, width))
            np.testing.assert_array_equal(inputs["x_lengths"], counts(cols, "part_px", rows))
            assert b.padded_width(b.fields[0], int(inputs["x_lengths"].max(initial=0))) <= width
            seen += list(rows)
        assert sorted(seen) == list(range(N))


def test_equal_counts_read_apart_pad_as_one_group(data):
    cols, path, _ = data
    apart = lstm_data.open(path, schema={"groups": {"px": ["part_px"], "py": ["part_py"]}})
    one = lstm_data.open(path)
    spec = BatchSpec(inputs={"x": Ragged(["part_py", "part_px"], max_len=9)})
    for (a, _), (b, _) in zip(batches(apart, spec)[1], batches(one, spec)[1]):
        assert_bitwise(a["x"], b["x"])


def test_what_needs_one_count_per_row_names_field_groups_and_row(data):
    cols, path, _ = data
    ds = lstm_data.open(path)
    lens_px, lens_d0 = (ak.num(cols[v]).to_numpy() for v in ("part_px", "trk_d0"))
    row = int(np.flatnonzero(lens_px != lens_d0)[0])
    message = (rf"input 'x': with sort_by 'part_px' .* got group 'part': 'part_px'; group 'trk': "
               rf"'trk_d0' \(different prong counts per row: 'part' has {lens_px[row]} and 'trk' has "
               rf"{lens_d0[row]} in row {row}\)")
    with pytest.raises(SchemaError, match=message):
        Batches(ds, BatchSpec(inputs={"x": Ragged(["part_px", "trk_d0"], sort_by="part_px")}), Order(batch_size=8))
    with pytest.raises(SchemaError, match=r"mixes prong variables of groups 'part' and 'trk'"):
        Batches(ds, BatchSpec(inputs={"x": Ragged(["r"])}, derived={"r": "part_px + trk_d0"}), Order(batch_size=8))


def test_noise_touches_each_groups_real_elements_only(data):
    cols, path, _ = data
    ds = lstm_data.open(path)
    names = ["part_px", "sv_mass"]
    plain = BatchSpec(inputs={"x": Ragged(names, pad_value=-3.0)})
    noisy = plain.replace(augment={v: {"gaussian": 1.0} for v in names})
    for (a, _), (b, _) in zip(batches(ds, plain, seed=2)[1], batches(ds, noisy, seed=2)[1]):
        changed = a["x"] != b["x"]
        assert (changed == (a["x"] != -3.0)).all()  # every real element has noise, no pad slot


def test_a_store_holds_the_batches(data, tmp_path):
    """precompute sizes every batch from row counts alone: the width of any group, the mask's too."""
    from lstm_data import open_batches
    from lstm_data.store.write import precompute

    _, path, _ = data
    ds = lstm_data.open(path)
    spec = BatchSpec(inputs={"x": Ragged(["sv_mass", "trk_d0"], lengths=True, mask=True)},
                     targets={"y": lstm_data.Scalars(["label"])})
    order = Order(batch_size=16, seed=4)
    precompute(ds, spec, tmp_path / "s.zarr", order, progress=False)
    stored, built = open_batches(tmp_path / "s.zarr"), Batches(ds, spec, order)
    for i in range(len(built)):
        for k, v in built[i][0].items():
            assert_bitwise(stored[i][0][k], v, f"{k} of batch {i}")
