"""Differential fuzz (issue 16): Hypothesis draws cases across the whole op table (the OpInfo DB) and compares
tgrad's forward with the OpInfo's numpy reference.

A case: an OpInfo, a dtype it supports, a sample from its sampler under a drawn seed (new values and,
where the sampler varies them, shapes), and per array argument a layout (contiguous, every other element
of a wider buffer, stored transposed, at a storage offset) when the OpInfo allows non-contiguous inputs.
Element-wise ops (which broadcast) also get broadcast operands (size-1 or missing leading dims, cut
from the full operand) and 0-size inputs (dim 0 cut to 0).  The suite runs ``TGRAD_FUZZ_EXAMPLES``
cases (default 150, seconds on cpu); ``TGRAD_FUZZ_EXAMPLES=10000`` (or ``python benchmarks/fuzz_ops.py``)
runs a long campaign.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tgrad
from tgrad.testing.opinfo import cast_like
from tgrad.testing.opinfo_db import OP_DB
from tgrad.testing.opinfos import activation, compare, elementwise, unary
from test_ops import _check, _ref

EXAMPLES = int(os.environ.get("TGRAD_FUZZ_EXAMPLES", "150"))
BROADCASTING = {o.name for family in (elementwise, unary, activation, compare) for o in family.OPS
                if not o.name.endswith("_backward")}
LAYOUTS = ("contiguous", "stepped", "transposed", "offset")
VIEWS = {"view"}        # need strides a view can be made of (PyTorch refuses the others too)


def _layout(a, dtype, layout, device):
    """A tensor holding ``a`` (already cast like ``cast_like``) in the given memory layout."""
    from tgrad.testing.opinfo import to_tensor
    if layout == "stepped" and a.ndim >= 1 and a.size > 1:
        return to_tensor(a, dtype, device, noncontig=True)
    if layout == "transposed" and a.ndim >= 2:
        perm = tuple(reversed(range(a.ndim)))
        return to_tensor(np.ascontiguousarray(a.transpose(perm)), dtype, device).permute(*perm)
    if layout == "offset" and a.size:
        flat = np.concatenate([np.zeros(3, a.dtype), a.reshape(-1)])
        return to_tensor(flat, dtype, device)[3:].view(*a.shape)
    return to_tensor(a, dtype, device)


def _broadcast(a, draw):
    """``a`` cut to a shape that broadcasts back to ``a.shape``: some dims size 1, maybe fewer leading dims."""
    for d in range(a.ndim):
        if draw(st.booleans()):
            a = a.take([0], axis=d) if a.shape[d] else a
    lead = draw(st.integers(0, a.ndim))
    while lead and a.shape[0] == 1:
        a, lead = a[0], lead - 1
    return a


@st.composite
def cases(draw):
    opinfo = draw(st.sampled_from(OP_DB))
    dtype = draw(st.sampled_from(opinfo.dtypes))
    seed = draw(st.integers(0, 2**32 - 1))
    samples = opinfo.sample_inputs(seed)
    sample = samples[draw(st.integers(0, len(samples) - 1))]
    args = list(sample.args)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    kind = "plain"
    if opinfo.name in BROADCASTING and arrays:
        kind = draw(st.sampled_from(["plain", "broadcast", "empty"]))
        first = args[arrays[0]]
        if kind == "broadcast":
            for i in arrays[1:]:
                if args[i].shape == first.shape and draw(st.booleans()):
                    args[i] = _broadcast(args[i], draw)
        elif kind == "empty" and first.ndim >= 1:
            n = first.shape[0]
            for i in arrays:
                if args[i].ndim >= 1 and args[i].shape[0] == n:
                    args[i] = args[i][:0]
    allowed = ("contiguous", "offset") if opinfo.name in VIEWS else LAYOUTS
    layouts = {i: draw(st.sampled_from(allowed)) if opinfo.noncontig else "contiguous" for i in arrays}
    return opinfo, dtype, seed, sample, args, layouts, kind


def check_case(case, device):
    """Run one drawn case on ``device``; an AssertionError (or an unexpected exception) is a mismatch."""
    opinfo, dtype, seed, sample, args, layouts, kind = case
    tgrad.manual_seed(seed % 2**31)
    tensors = [_layout(cast_like(a, dtype).astype(a.dtype) if dtype.is_floating_point else a, dtype,
                       layouts[i], device) if i in layouts else a for i, a in enumerate(args)]
    ref_sample = type(sample)(*args, **sample.kwargs)
    try:
        ref = _ref(opinfo, ref_sample, dtype)
    except (ValueError, IndexError, ZeroDivisionError):     # numpy refuses this case: so must tgrad
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            opinfo.op(*tensors, **sample.kwargs)
        return
    out = opinfo.op(*tensors, **sample.kwargs)
    _check(opinfo, out, ref, dtype, f"{ref_sample} seed={seed} layouts={layouts} kind={kind}")


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 150, database=None,
          suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_op_table_matches_numpy(case, device):
    check_case(case, device)
