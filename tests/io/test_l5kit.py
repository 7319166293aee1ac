"""L5Kit zarr v2 stores: structured arrays with subarray fields, intervals as ragged groups.

The fixture is a real zarr v2 directory store written by hand (``.zgroup``,
``.zarray`` JSON and Blosc-compressed chunk files), with the seed's dtypes.
"""
from __future__ import annotations

import json
from pathlib import Path

import numcodecs
import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError
from lstm_data.io.l5kit.reader import L5KitDataset, flat_fields

N_LABELS = 17
SCENE_DTYPE = [("frame_index_interval", np.int64, (2,)), ("host", "<U16"),
               ("start_time", np.int64), ("end_time", np.int64)]
FRAME_DTYPE = [("timestamp", np.int64), ("agent_index_interval", np.int64, (2,)),
               ("traffic_light_faces_index_interval", np.int64, (2,)),
               ("ego_translation", np.float64, (3,)), ("ego_rotation", np.float64, (3, 3))]
AGENT_DTYPE = [("centroid", np.float64, (2,)), ("extent", np.float32, (3,)), ("yaw", np.float32),
               ("velocity", np.float32, (2,)), ("track_id", np.uint64),
               ("label_probabilities", np.float32, (N_LABELS,))]
TL_FACE_DTYPE = [("face_id", "<U16"), ("traffic_light_id", "<U16"),
                 ("traffic_light_face_status", np.float32, (3,))]


def write_v2_array(root: Path, name: str, records: np.ndarray, chunk_len: int) -> None:
    """A zarr v2 array: ``.zarray`` metadata and one Blosc-compressed file per chunk."""
    codec = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    path = root / name
    path.mkdir()
    meta = {"zarr_format": 2, "shape": [len(records)], "chunks": [chunk_len],
            "dtype": [list(d) for d in records.dtype.descr], "compressor": codec.get_config(),
            "fill_value": None, "filters": None, "order": "C"}
    (path / ".zarray").write_text(json.dumps(meta))
    for c in range(-(-len(records) // chunk_len)):
        chunk = np.zeros(chunk_len, dtype=records.dtype)  # v2 stores full (padded) chunks
        piece = records[c * chunk_len:(c + 1) * chunk_len]
        chunk[:len(piece)] = piece
        (path / str(c)).write_bytes(codec.encode(chunk.tobytes()))


def make_store(root: Path, n_scenes=4, frames_per_scene=30, seed=0, agent_chunk=50):
    rng = np.random.default_rng(seed)
    n_frames = n_scenes * frames_per_scene
    n_agents_per_frame = rng.integers(0, 9, n_frames)
    n_agents_per_frame[5] = 0
    agent_bounds = np.concatenate([[0], np.cumsum(n_agents_per_frame)])
    tl_per_frame = rng.integers(0, 3, n_frames)
    tl_bounds = np.concatenate([[0], np.cumsum(tl_per_frame)])
    scenes = np.zeros(n_scenes, dtype=SCENE_DTYPE)
    scenes["frame_index_interval"] = np.stack([np.arange(n_scenes) * frames_per_scene,
                                               np.arange(1, n_scenes + 1) * frames_per_scene], 1)
    scenes["host"] = "host-a013"
    frames = np.zeros(n_frames, dtype=FRAME_DTYPE)
    frames["timestamp"] = 1_600_000_000_000 + np.arange(n_frames) * 100
    frames["agent_index_interval"] = np.stack([agent_bounds[:-1], agent_bounds[1:]], 1)
    frames["traffic_light_faces_index_interval"] = np.stack([tl_bounds[:-1], tl_bounds[1:]], 1)
    frames["ego_translation"] = rng.normal(size=(n_frames, 3))
    frames["ego_rotation"] = rng.normal(size=(n_frames, 3, 3))
    agents = np.zeros(int(agent_bounds[-1]), dtype=AGENT_DTYPE)
    agents["centroid"] = rng.normal(size=(len(agents), 2)) * 100
    agents["extent"] = rng.random((len(agents), 3))
    agents["yaw"] = rng.random(len(agents))
    agents["velocity"] = rng.normal(size=(len(agents), 2))
    agents["track_id"] = rng.integers(0, 1000, len(agents))
    agents["label_probabilities"] = rng.random((len(agents), N_LABELS))
    faces = np.zeros(int(tl_bounds[-1]), dtype=TL_FACE_DTYPE)
    faces["face_id"] = "f"
    faces["traffic_light_face_status"] = rng.random((len(faces), 3))
    root.mkdir()
    (root / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    write_v2_array(root, "scenes", scenes, 2)
    write_v2_array(root, "frames", frames, 16)
    write_v2_array(root, "agents", agents, agent_chunk)
    write_v2_array(root, "traffic_light_faces", faces, 40)
    return scenes, frames, agents, faces


def agent_matrix(agents: np.ndarray) -> np.ndarray:
    cols = [agents["centroid"], agents["extent"], agents["yaw"][:, None], agents["velocity"],
            agents["track_id"][:, None].astype(np.float64), agents["label_probabilities"]]
    return np.concatenate([c.astype(np.float64).reshape(len(agents), -1) for c in cols], axis=1)


@pytest.fixture()
def store(tmp_path):
    arrays = make_store(tmp_path / "sample.zarr")
    return tmp_path / "sample.zarr", arrays


def test_zarr3_refuses_this_dtype_so_we_need_our_own_reader(store):
    zarr = pytest.importorskip("zarr")
    # zarr-python 3 has no data type for structured records with subarray fields (L5Kit's agents)
    with pytest.raises(ValueError, match="No Zarr data type found"):
        zarr.open_array(store[0] / "agents", mode="r")[:]


def test_open_detects_l5kit_and_exposes_relations(store):
    path, (_, frames, agents, faces) = store
    ds = lstm_data.open(path)
    assert isinstance(ds, L5KitDataset)
    assert len(ds) == len(frames)
    assert set(ds.groups) == {"agents", "traffic_light_faces"}
    names = ds.groups["agents"]
    assert names[:3] == ["centroid_0", "centroid_1", "extent_0"]
    assert names[-1] == "label_probabilities_16" and len(names) == 2 + 3 + 1 + 2 + 1 + N_LABELS
    assert ds.groups["traffic_light_faces"] == [f"traffic_light_face_status_{i}" for i in range(3)]
    assert "timestamp" in ds.scalar_names and "ego_rotation_1_2" in ds.scalar_names
    assert not any("interval" in s for s in ds.scalar_names)
    assert np.array_equal(ds.scalar("ego_rotation_1_2"), frames["ego_rotation"][:, 1, 2])
    assert np.array_equal(ds.scalar("ego_translation_0"), frames["ego_translation"][:, 0])
    values, offsets = ds.ragged("agents")
    assert values.dtype == np.float64
    assert np.array_equal(offsets, np.concatenate([[0], frames["agent_index_interval"][:, 1]]))
    assert np.array_equal(values, agent_matrix(agents))


def test_batch_of_frames_with_agents_any_order(store):
    path, (_, frames, agents, _) = store
    ds = L5KitDataset(path, cache_chunks=0)
    rows = np.array([100, 3, 5, 3, 77, 119, 0])
    values, offsets = ds.ragged("agents", rows)
    full = agent_matrix(agents)
    for i, r in enumerate(rows):
        a, b = frames["agent_index_interval"][r]
        assert np.array_equal(values[offsets[i]:offsets[i + 1]], full[a:b])
    assert offsets[3] - offsets[2] == 0  # frame 5 has no agents
    batch, lengths = lstm_data.kernels.pad_ragged(values, offsets, max_len=4, pad_value=0.0)
    assert batch.shape == (len(rows), 4, len(ds.groups["agents"]))


def test_each_chunk_decoded_once_per_request(store, monkeypatch):
    path, (_, frames, _, _) = store
    ds = L5KitDataset(path, cache_chunks=0)
    decoded = []
    original = numcodecs.Blosc.decode
    monkeypatch.setattr(numcodecs.Blosc, "decode",
                        lambda self, buf, out=None: decoded.append(1) or original(self, buf, out))
    rows = np.arange(0, len(frames), 3)[::-1]  # spread over every agent chunk, reversed
    ds.ragged("agents", rows)
    n_chunks = ds.arrays["agents"].n_chunks
    assert len(decoded) == ds.arrays["agents"].decoded <= n_chunks
    assert len(decoded) >= n_chunks - 1


def test_lru_cache_spares_repeated_requests(store):
    path, _ = store
    ds = L5KitDataset(path, cache_chunks=8)
    rows = np.arange(10, 20)
    ds.ragged("agents", rows)
    first = ds.arrays["agents"].decoded
    ds.ragged("agents", rows[::-1])
    assert first > 0 and ds.arrays["agents"].decoded == first


def test_scenes_as_parent_and_float32_values(store):
    path, (scenes, _, _, _) = store
    ds = lstm_data.open(path, parent="scenes", relations={"frames": "frame_index_interval"},
                        dtype=np.float32)
    assert len(ds) == len(scenes) and list(ds.groups) == ["frames"]
    values, offsets = ds.ragged("frames", [1])
    assert values.dtype == np.float32 and offsets[-1] == 30
    assert ds.scalar_names == ["start_time", "end_time"]


def test_take_and_convert_to_our_layout(store, tmp_path):
    path, _ = store
    ds = lstm_data.open(path)
    ds.to_zarr(tmp_path / "ours.zarr")
    back = lstm_data.open(tmp_path / "ours.zarr")
    for g in ds.groups:
        assert back.ragged(g)[0].tobytes() == ds.ragged(g)[0].tobytes()
    sub = ds.take([7, 2])
    assert np.array_equal(sub.scalar("timestamp"), ds.scalar("timestamp")[[7, 2]])


def test_bad_interval_names_the_row(tmp_path):
    make_store(tmp_path / "s.zarr")
    meta = json.loads((tmp_path / "s.zarr/agents/.zarray").read_text())
    meta["shape"] = [3]  # intervals now point past the end of agents
    (tmp_path / "s.zarr/agents/.zarray").write_text(json.dumps(meta))
    with pytest.raises(FormatError) as err:
        lstm_data.open(tmp_path / "s.zarr")
    assert err.value.row is not None and err.value.variable == "agents"


def test_flat_fields_skips_strings():
    assert flat_fields(np.dtype(TL_FACE_DTYPE)) == [
        ("traffic_light_face_status", f"traffic_light_face_status_{i}") for i in range(3)]


# -- damaged stores: FormatError naming the .zarray or chunk file and what is wrong ----------


def _edit_zarray(root: Path, array: str, change) -> Path:
    file = root / array / ".zarray"
    meta = json.loads(file.read_text())
    change(meta)
    file.write_text(json.dumps(meta))
    return file


@pytest.mark.parametrize("change, message", [
    (lambda m: m.pop("chunks"), "no 'chunks' key"),
    (lambda m: m.pop("shape"), "no 'shape' key"),
    (lambda m: m.pop("dtype"), "no 'dtype' key"),
    (lambda m: m.update(chunks=[0]), r"chunks is \[0\]: expected an integer >= 1"),
    (lambda m: m.update(chunks=["50"]), r"chunks is \['50'\]"),
    (lambda m: m.update(shape=[10, 2]), "only 1-D arrays"),
    (lambda m: m.update(shape=[-1]), r"shape is \[-1\]"),
    (lambda m: m["compressor"].update(id="no-such-codec"), "compressor .*no-such-codec.* unknown"),
    (lambda m: m.update(compressor="blosc"), "compressor 'blosc' is unknown or invalid"),
    (lambda m: m.update(filters=[{"id": "no-such-filter"}]), "filter 0 .*no-such-filter"),
    (lambda m: m.update(filters={"id": "delta"}), "filters is .*expected a list"),
    (lambda m: m.update(dtype="not-a-dtype"), "dtype 'not-a-dtype' is not a valid numpy dtype"),
    (lambda m: m.update(dtype="|O"), "not supported"),
    (lambda m: m.update(fill_value="AAAA"), "fill_value 'AAAA'"),
    (lambda m: m.update(order="F"), "only C-order"),
    (lambda m: m.update(zarr_format=3), "zarr_format is 3, expected 2"),
])
def test_bad_zarray_is_a_format_error_naming_it(tmp_path, change, message):
    make_store(tmp_path / "s.zarr")
    file = _edit_zarray(tmp_path / "s.zarr", "agents", change)
    with pytest.raises(FormatError, match=message) as err:
        lstm_data.open(tmp_path / "s.zarr")
    assert err.value.file == str(file)


def test_unreadable_zarray_is_a_format_error_naming_it(tmp_path):
    make_store(tmp_path / "s.zarr")
    for text, message in (('{"zarr_format": 2, "sha', "cannot read zarr v2 metadata"),
                          ("[2]", "is a JSON list, expected an object")):
        (tmp_path / "s.zarr" / "frames" / ".zarray").write_text(text)
        with pytest.raises(FormatError, match=message) as err:
            lstm_data.open(tmp_path / "s.zarr")
        assert err.value.file == str(tmp_path / "s.zarr" / "frames" / ".zarray")


def test_missing_chunk_with_null_fill_value_is_a_format_error(store):
    path, _ = store
    (path / "frames" / "1").unlink()  # zarr writes every chunk when fill_value is null
    with pytest.raises(FormatError, match=r"chunk 1 of array 'frames' is missing; with "
                                          r"fill_value null") as err:
        lstm_data.open(path)
    assert err.value.file == str(path / "frames" / "1")
    (path / "agents" / "2").unlink()
    with pytest.raises(FormatError, match="chunk 2 of array 'agents' is missing"):
        L5KitDataset(path, parent="scenes", relations={"agents": "frame_index_interval"}
                     ).ragged("agents")


def test_missing_chunk_with_a_fill_value_reads_as_it(store):
    path, (_, _, agents, _) = store
    _edit_zarray(path, "agents", lambda m: m.update(fill_value=0))
    (path / "agents" / "1").unlink()  # legitimate in zarr: a chunk equal to the fill value
    values, _ = lstm_data.open(path).ragged("agents")
    expected = agent_matrix(agents)
    expected[50:100] = 0
    assert np.array_equal(values, expected)


@pytest.mark.parametrize("other_chunk", [25, 100])
def test_chunk_of_another_chunking_is_a_format_error(tmp_path, other_chunk):
    make_store(tmp_path / "a.zarr", agent_chunk=50)
    make_store(tmp_path / "b.zarr", agent_chunk=other_chunk)
    chunk = tmp_path / "a.zarr" / "agents" / "1"
    chunk.write_bytes((tmp_path / "b.zarr" / "agents" / "0").read_bytes())
    ds = lstm_data.open(tmp_path / "a.zarr")
    record = np.dtype(AGENT_DTYPE).itemsize
    with pytest.raises(FormatError, match=rf"chunk 1 of array 'agents' decodes to "
                                          rf"{other_chunk * record} bytes, expected "
                                          rf"{50 * record} \(50 records") as err:
        ds.ragged("agents")
    assert err.value.file == str(chunk)


def test_truncated_chunk_is_a_format_error_naming_it(store):
    path, _ = store
    chunk = path / "agents" / "2"
    chunk.write_bytes(chunk.read_bytes()[:40])
    with pytest.raises(FormatError, match="chunk 2 of array 'agents' is 40 bytes long, but its Blosc header "
                                          r"says \d+") as err:
        lstm_data.open(path).ragged("agents")
    assert err.value.file == str(chunk)
