"""What the CLI says about integrity (issue 16): ``inspect`` notes stores that cannot detect
damage; ``convert -v`` says which stale temporaries it removed."""
from __future__ import annotations

import json

from lstm_data.cli import main
from lstm_data.data.synthetic import make_dataset
from tests.io.test_stale_temporaries import killed_write


def test_inspect_notes_an_old_zarr_store(tmp_path, capsys):
    from tests.helpers import as_old_zarr_store

    ds = make_dataset(500, seed=1)
    ds.to_zarr(tmp_path / "new.zarr")
    ds.to_zarr(tmp_path / "old.zarr", checksum=False)
    as_old_zarr_store(tmp_path / "old.zarr")
    assert main(["inspect", str(tmp_path / "new.zarr"), "--no-stats"]) == 0
    assert "note:" not in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "old.zarr"), "--no-stats"]) == 0
    out = capsys.readouterr().out
    note = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(note) == 1 and str(tmp_path / "old.zarr") in note[0]
    assert "reads back as zeros" in note[0] and "re-convert" in note[0]
    both = [str(tmp_path / "new.zarr"), str(tmp_path / "old.zarr")]
    assert main(["inspect", *both, "--no-stats", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["notes"]) == 1 and str(tmp_path / "old.zarr") in doc["notes"][0]


def test_convert_says_which_stale_temporary_it_removed(tmp_path, capsys):
    source = tmp_path / "src.zarr"
    make_dataset(3000, seed=2).to_zarr(source)
    out = tmp_path / "out.h5"
    left = killed_write(source, out)
    assert main(["convert", str(source), str(out)]) == 0  # said by default, without -v
    assert not left.exists() and out.exists()
    err = capsys.readouterr().err
    assert f"lstm-data convert: removed {left}" in err and err.count("removed") == 1
    out = tmp_path / "out2.h5"
    left = killed_write(source, out)
    assert main(["convert", "-q", str(source), str(out)]) == 0  # --quiet: nothing
    assert not left.exists() and capsys.readouterr().err == ""


def test_convert_hdf5_without_compression_still_checksums(tmp_path):
    import h5py

    from lstm_data.cli import main
    from lstm_data.data import synthetic

    src = tmp_path / "ev.csv"
    synthetic.write_csv(src, n_rows=300, seed=2)
    assert main(["convert", str(src), str(tmp_path / "o.h5"), "--compression", "none", "-q"]) == 0
    with h5py.File(tmp_path / "o.h5") as fh:
        chunked = []
        fh.visititems(lambda name, obj: chunked.append(obj) if isinstance(obj, h5py.Dataset)
                      and obj.chunks else None)
        assert chunked and all(d.fletcher32 and d.compression is None for d in chunked)
