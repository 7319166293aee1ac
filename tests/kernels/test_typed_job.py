"""The typed ragged job: ``ragged_job`` (typed arguments, checked once) gives ``BatchGather`` the
same bits as the public mapping of the same arguments, on both backends; a job padded to a
chosen width pads each of its sources to it; the batch builder hands the kernel typed jobs."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged
from lstm_data.kernels import KERNEL_LAYOUTS, RaggedJob, RaggedSource, ragged_job
from tests.helpers import assert_bitwise

pytestmark = pytest.mark.kernels

RNG = np.random.default_rng(11)
VALUES = RNG.normal(size=(14, 3)).astype(np.float32)
OFFSETS = np.array([0, 2, 2, 7, 12, 14])
OTHER = RNG.normal(size=(9, 2))
OTHER_OFFSETS = np.array([0, 3, 3, 4, 9, 9])
ROWS = np.array([3, 0, 1, 4, 2, 3])


@pytest.mark.parametrize("layout", KERNEL_LAYOUTS)
@pytest.mark.parametrize("forms", [dict(), dict(pad_mode="wrap"), dict(padding="pre", truncating="pre"),
                                   dict(center=[1.0, 0.0, -1.0], scale=[2.0, 1.0, 0.5], clip_min=[-1, -2, -3],
                                        clip_max=[1, 2, 3], pad_values=[-1.0, -2.0, -3.0])])
def test_typed_and_mapped_jobs_give_the_same_bits(backend, layout, forms):
    if layout == "packed" and forms.get("pad_mode") == "wrap":
        return
    mapped = dict(values=VALUES, offsets=OFFSETS, max_len=4, fixed=False, pad_value=-9.0, layout=layout, **forms)
    typed = ragged_job(((VALUES, OFFSETS),), max_len=4, fixed=False, pad_value=-9.0,
                       layout=KERNEL_LAYOUTS.index(layout), **forms)
    assert isinstance(typed, RaggedJob)
    (want, want_len), = backend.BatchGather([mapped])(ROWS)[0]
    (got, got_len), = backend.BatchGather([typed])(ROWS)[0]
    assert_bitwise(got, want)
    assert_bitwise(got_len, want_len)


def test_a_typed_job_of_sources_at_a_chosen_width(backend):
    typed = ragged_job(((VALUES, OFFSETS),), columns=np.array([2, 0]), pad_value=0.5, multiple_of=3,
                       more=[RaggedSource(((OTHER, OTHER_OFFSETS),), None, np.array([0, 3]))],
                       at=np.array([1, 2]))
    mapped = dict(parts=[(VALUES, OFFSETS)], columns=np.array([2, 0]), pad_value=0.5, max_len=7, fixed=True,
                  more=[dict(parts=[(OTHER, OTHER_OFFSETS)], at=np.array([0, 3]))], at=np.array([1, 2]))
    (want, want_len), = backend.BatchGather([mapped])(ROWS)[0]
    (got, got_len), = backend.BatchGather([typed.at_width(7)])(ROWS)[0]
    assert got.shape == (len(ROWS), 7, 4)
    assert_bitwise(got, want)
    assert_bitwise(got_len, want_len)


@pytest.mark.parametrize("layout", [-1, len(KERNEL_LAYOUTS), True, "packed"])
def test_a_layout_code_out_of_the_table_is_refused(layout):
    with pytest.raises(ValueError, match="layout must be a code of"):
        ragged_job(((VALUES, OFFSETS),), layout=layout)


def test_the_builder_hands_the_kernel_typed_jobs(ds):
    spec = BatchSpec(inputs={"x": Ragged(["png.calE", "png.nhit"], max_len=5, layout="channels_first")})
    batches = Batches(ds, spec, Order(batch_size=8, seed=1))
    jobs, _ = batches.builder.gather_jobs()
    assert [type(j) for j in jobs] == [RaggedJob]
    assert jobs[0].layout == KERNEL_LAYOUTS.index("channels_first")
    assert batches[0][0]["x"].shape == (8, 2, 5)
