"""A policy travels with its order: spawned workers run it, and a name is found in code or entry points only."""
from __future__ import annotations

import pickle
import sys
import textwrap

import numpy as np
import pytest

from lstm_data import Batches, Order
from lstm_data.batching.order import registry
from lstm_data.batching.order.registry import PolicyTable, register_policy
from lstm_data.errors import OptionError
from tests.adapters.rows import row_dataset, row_spec, rows_in
from tests.batching.test_order_policies import _kth_first


@pytest.fixture
def kth_first_registered_here_only():
    """``kth_first`` registered in this process alone: importing its module does not register it."""
    register_policy("kth_first", _kth_first)
    yield
    registry._POLICIES.pop("kth_first", None)


def _kth(n: int, k: int) -> np.ndarray:
    picked = np.arange(0, n, k)
    return np.concatenate([picked, np.setdiff1d(np.arange(n), picked)])


def test_a_spawned_dataloader_worker_runs_the_policy_registered_in_the_parent(kth_first_registered_here_only):
    torch = pytest.importorskip("torch")
    from lstm_data.adapters.torch import TorchBatches

    batches = Batches(row_dataset(300), row_spec(), Order(batch_size=50, shuffle=False,
                                                          policies={"kth_first": {"k": 3}}))
    loader = torch.utils.data.DataLoader(TorchBatches(batches), batch_size=None, num_workers=1,
                                         multiprocessing_context="spawn")
    seen = np.concatenate([rows_in(x) for x, _, _ in loader])
    np.testing.assert_array_equal(seen, _kth(300, 3))  # not the file order


def test_a_pickled_order_carries_its_policy_and_registers_it_where_it_lands(kth_first_registered_here_only):
    order = Order(batch_size=50, shuffle=False, policies={"kth_first": {"k": 4}})
    data = pickle.dumps(Batches(row_dataset(200), row_spec(), order))
    registry._POLICIES.pop("kth_first")  # as in a process that never registered it
    batches = pickle.loads(data)
    assert isinstance(batches.order.policies, PolicyTable)
    assert batches.order.policies == {"kth_first": {"k": 4}}  # as a table: the options alone
    seen = np.concatenate([rows_in(batches[i][0]) for i in range(len(batches))])
    np.testing.assert_array_equal(seen, _kth(200, 4))
    assert Order(policies={"kth_first": {"k": 2}}).policies.policies["kth_first"].make is _kth_first


def test_a_name_nothing_registered_is_an_error_that_says_how_to_register():
    with pytest.raises(OptionError, match=r"unknown order policy 'nowhere'.*register_policy\('nowhere'.*"
                                          r"entry point of group 'lstm_data.policies'"):
        Order(policies={"nowhere": {}})
    with pytest.raises(OptionError, match="unknown order policy 'sample'"):  # built-ins come from fields
        Order(policies={"sample": {}})


def test_an_installed_package_declares_a_policy_by_entry_point(tmp_path, monkeypatch):
    (tmp_path / "every_other_plugin.py").write_text(textwrap.dedent("""
        from tests.batching.test_order_policies import KthFirst
        from lstm_data.batching.order.registry import Policy

        def make(context):
            return KthFirst(2)

        POLICY = Policy("every_other", make, rank=40)
    """))
    info = tmp_path / "every_other_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: every-other-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[lstm_data.policies]\nevery_other = every_other_plugin:POLICY\n"
                                           "bad_one = every_other_plugin:__name__\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        batches = Batches(row_dataset(100), row_spec(), Order(batch_size=25, shuffle=False,
                                                              policies={"every_other": {}}))
        seen = np.concatenate([rows_in(batches[i][0]) for i in range(len(batches))])
        np.testing.assert_array_equal(seen, _kth(100, 2))
        assert registry._POLICIES["every_other"].rank == 40
        with pytest.raises(OptionError, match="neither a Policy nor a function"):
            Order(policies={"bad_one": {}})
    finally:
        registry._POLICIES.pop("every_other", None)
        sys.modules.pop("every_other_plugin", None)
