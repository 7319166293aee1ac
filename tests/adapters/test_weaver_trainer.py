"""weaver-core's own trainer (``weaver.train.main``) on lstm_data's loaders: ``lstm-data weaver ...``.

One epoch on CPU, with a network module written here in weaver's format, over the
JetClass-like ROOT fixture and a Parquet copy of it. The batches the network and the
loss received are compared with weaver-core's own loader reading the same files in
order (inputs, labels, and the observers of the test loader).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("yaml")
torch = pytest.importorskip("torch")
pytest.importorskip("weaver.train")
pytest.importorskip("uproot")

from torch.utils.data import DataLoader  # noqa: E402
from weaver.utils.dataset import SimpleIterDataset  # noqa: E402

from lstm_data.adapters import weaver as adapter  # noqa: E402
from lstm_data.cli import main  # noqa: E402

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[1] / "data" / "weaver"
BATCH = 32

NETWORK = '''
import sys
import types

import torch

# what the network and the loss received, where the test finds it (weaver imports this file by path)
if "tiny_net_record" not in sys.modules:
    sys.modules["tiny_net_record"] = types.ModuleType("tiny_net_record")
    sys.modules["tiny_net_record"].SEEN = {"train": [], "eval": []}
    sys.modules["tiny_net_record"].LABELS = []
SEEN = sys.modules["tiny_net_record"].SEEN
LABELS = sys.modules["tiny_net_record"].LABELS


class Net(torch.nn.Module):
    def __init__(self, n_inputs, n_classes):
        super().__init__()
        self.lin = torch.nn.Linear(n_inputs, n_classes)

    def forward(self, *inputs):
        SEEN["train" if self.training else "eval"].append([x.clone() for x in inputs])
        return self.lin(torch.cat([x.flatten(1).mean(1, keepdim=True) for x in inputs], dim=1))


class Loss(torch.nn.CrossEntropyLoss):
    def forward(self, logits, label):
        LABELS.append(label.clone())
        return super().forward(logits, label)


def get_model(data_config, **kwargs):
    model = Net(len(data_config.input_names), len(data_config.label_value))
    info = {"input_names": list(data_config.input_names),
            "input_shapes": {k: (1,) + tuple(s[1:]) for k, s in data_config.input_shapes.items()},
            "output_names": ["softmax"], "dynamic_axes": {}}
    return model, info


def get_loss(data_config, **kwargs):
    return Loss()
'''


@pytest.fixture(params=["root", "parquet"])
def data_file(request, tmp_path) -> Path:
    if request.param == "root":
        return Path(shutil.copy(DATA / "jets.root", tmp_path / "jets.root"))
    ak = pytest.importorskip("awkward")
    pytest.importorskip("pyarrow")
    import uproot
    with uproot.open(DATA / "jets.root") as f:
        tree = f[f.keys()[0]]
        arrays = tree.arrays(library="ak")
    path = tmp_path / "jets.parquet"
    ak.to_parquet(arrays, path)
    return path


def weaver_reference(files, config, load_range, batch_size):
    """weaver-core's own loader over ``files`` in order, no shuffle (its test mode), as a list of batches."""
    data = SimpleIterDataset({"_": [str(f) for f in files]}, str(config), for_training=False,
                             load_range_and_fraction=(load_range, 1, 1), fetch_by_files=True, fetch_step=1,
                             name="reference")
    return list(DataLoader(data, batch_size=batch_size, drop_last=True, num_workers=0))


def test_one_epoch_of_weavers_trainer_on_our_loaders(data_file, tmp_path, monkeypatch):
    config = tmp_path / "JetClass_full.yaml"
    shutil.copy(DATA / "JetClass_full.yaml", config)
    network = tmp_path / "tiny_net.py"
    network.write_text(NETWORK)
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("tiny_net_record", None)
    code = main(["weaver", "--shuffle", "false", "--threads", "2",
                 "--data-train", str(data_file), "--data-config", str(config), "--network-config", str(network),
                 "--run-mode", "train,val", "--num-epochs", "1", "--batch-size", str(BATCH), "--gpus", "",
                 "--num-workers", "0", "--model-prefix", str(tmp_path / "model" / "net"),
                 "--optimizer", "adam", "--start-lr", "1e-3"])
    assert code == 0
    assert (tmp_path / "model" / "net_epoch-0_state.pt").exists()  # weaver finished the epoch and saved
    net = sys.modules["tiny_net_record"]
    names = ["pf_points", "pf_features", "pf_vectors", "pf_mask"]

    # training: rows 0..160 of 200 (--train-val-split 0.8), 5 batches; validation: rows 160..200, 1 batch
    # (weaver-core 0.5.3 reads a slice of a Parquet file wrongly, so its reference reads the whole file: rows
    # 0..192 in 6 batches of 32 are the 5 training batches, then the validation batch)
    reference = weaver_reference([data_file], config, (0, 1), BATCH)
    train_ref, val_ref = reference[:5], reference[5:6]
    assert len(net.SEEN["train"]) == len(train_ref) == 5
    evaluated = [seen for seen in net.SEEN["eval"] if seen[0].shape[0] > 1]  # not weaver's flops count (1 row)
    assert len(evaluated) == len(val_ref) == 1
    for seen, (x, y, _) in zip(net.SEEN["train"] + evaluated, train_ref + val_ref):
        for name, tensor in zip(names, seen):
            assert tensor.dtype == x[name].dtype == torch.float32
            assert torch.equal(tensor, x[name]), name
    for label, (_, y, _) in zip(net.LABELS, train_ref + val_ref):
        assert label.dtype == torch.int64 and label.shape == (BATCH,)
        assert torch.equal(label, y["_label_"].long())


def test_test_loader_gives_weavers_observers(data_file, tmp_path):
    import weaver.train

    config = tmp_path / "JetClass_full.yaml"
    shutil.copy(DATA / "JetClass_full.yaml", config)
    args = weaver.train.parser.parse_args(["--data-test", str(data_file), "--data-config", str(config),
                                           "--network-config", "unused.py"])
    args.data_config_test, args.batch_size_test, args.local_rank = str(config), 64, None
    loaders, data_config = adapter.test_load(args)
    observers = set(data_config.observer_names)
    assert {"jet_pt", "jet_eta", "jet_phi"} <= observers
    ours = list(loaders[""]())
    ref = weaver_reference([data_file], config, (0, 1), 64)
    assert len(ours) == 4  # 200 rows, the last batch of 8 kept (weaver's test loader keeps it)
    for (x, y, z), (rx, ry, rz) in zip(ours, ref):
        assert set(z) == observers == set(rz)
        for name in rx:
            assert torch.equal(x[name], rx[name]), name
        assert torch.equal(y["_label_"], ry["_label_"].long())
        for name in z:
            np.testing.assert_array_equal(z[name].numpy(), rz[name].numpy())


def test_weaver_options_we_do_not_reproduce_are_refused(tmp_path):
    import weaver.train

    from lstm_data.errors import OptionError

    args = weaver.train.parser.parse_args(["--data-train", str(DATA / "jets.root"),
                                           "--data-config", str(DATA / "JetClass_full.yaml"),
                                           "--network-config", "unused.py", "--extra-selection-train", "jet_pt>0"])
    with pytest.raises(OptionError, match="--extra-selection-train"):
        adapter.train_load(args)


def test_rows_of_a_load_range_follow_weavers_rule():
    bounds = np.array([0, 10, 13])
    assert adapter.weaver_rows(bounds, (0, 0.8)).tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 10, 11]
    assert adapter.weaver_rows(bounds, (0.8, 1)).tolist() == [8, 9, 12]


def test_without_weaver_core_the_error_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "weaver.train", None)  # as if weaver-core were not installed
    assert main(["weaver", "--data-train", "x.root"]) == 1
    assert "pip install 'lstm_data[weaver]'" in capsys.readouterr().err
