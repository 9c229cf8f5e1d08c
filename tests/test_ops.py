"""Generic op tests driven by the op database (tgrad/testing/opinfo_db.py).

For every OpInfo: forward vs numpy for each dtype, non-contiguous inputs give
the same result, gradcheck (float64) and gradgradcheck.  And the table is the
single list: every op-table entry must be exercised forward (and backward
when it has a rule) by some OpInfo or be listed in COVERED_ELSEWHERE.
"""
import numpy as np
import pytest

import tgrad
from tgrad import dtypes as D
from tgrad.autograd import dispatch
from tgrad.ops import TABLE
from tgrad.testing.opinfo import cast_like, to_tensor
from tgrad.testing.opinfo_db import COVERED_ELSEWHERE, OP_DB

OPS = {o.name: o for o in OP_DB}


def _params():
    return [pytest.param(o, d, id=f"{o.name}-{d.name}") for o in OP_DB for d in o.dtypes]


def _run(opinfo, sample, dtype, device, noncontig=False, requires_grad=False):
    args = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            rg = requires_grad and (opinfo.diff_args is None or i in opinfo.diff_args)
            args.append(to_tensor(a, dtype, device, requires_grad=rg, noncontig=noncontig))
        else:
            args.append(a)
    return args, opinfo.op(*args, **sample.kwargs)


def _ref(opinfo, sample, dtype):
    args = [cast_like(a, dtype) if isinstance(a, np.ndarray) else a for a in sample.args]
    return opinfo.ref(*args, **sample.kwargs)


def _check(opinfo, out, ref, dtype, sample):
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    atol, rtol = opinfo.tolerance(dtype)
    for o, r in zip(outs, refs):
        got = o.detach()._host_copy()
        r = np.asarray(r)
        if got.dtype.kind in "iu":
            r = _int_ref(r, got.dtype)
        assert tuple(got.shape) == tuple(r.shape), f"{opinfo.name} {sample}: shape {got.shape} vs {r.shape}"
        if got.dtype == np.bool_ or r.dtype == np.bool_:
            np.testing.assert_array_equal(got, r, err_msg=f"{opinfo.name} {sample}")
        else:
            np.testing.assert_allclose(got.astype(np.float64), r.astype(np.float64), atol=atol, rtol=rtol,
                                       equal_nan=True, err_msg=f"{opinfo.name} {sample} {dtype}")


@pytest.mark.parametrize("opinfo,dtype", _params())
def test_forward(opinfo, dtype, device):
    for sample in opinfo.sample_inputs():
        _, out = _run(opinfo, sample, dtype, device)
        _check(opinfo, out, _ref(opinfo, sample, dtype), dtype, sample)


def _int_ref(r, np_dtype):
    """Reference for an integer-typed output: truncated and wrapped like the kernels' int64 maths."""
    r = np.asarray(r)
    if r.dtype == np.bool_:
        return r
    return np.trunc(r).astype(np.int64).astype(np_dtype)


@pytest.mark.parametrize("opinfo", [o for o in OP_DB if o.noncontig], ids=lambda o: o.name)
def test_noncontiguous(opinfo, device):
    dtype = opinfo.dtypes[0]
    for sample in opinfo.sample_inputs():
        _, a = _run(opinfo, sample, dtype, device)
        _, b = _run(opinfo, sample, dtype, device, noncontig=True)
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            if opinfo.layout_order and dtype.is_floating_point:   # ATen's order follows the layout
                np.testing.assert_allclose(x.detach()._host_copy(), y.detach()._host_copy(), rtol=1e-6, atol=1e-6,
                                           err_msg=f"{opinfo.name} {sample}")
                continue
            np.testing.assert_array_equal(x.detach()._host_copy(), y.detach()._host_copy(),
                                          err_msg=f"{opinfo.name} {sample}")


def _grad_samples(opinfo):
    return [s for s in opinfo.sample_inputs() if s.grad]


@pytest.mark.parametrize("opinfo", [o for o in OP_DB if o.grad and D.float64 in o.dtypes], ids=lambda o: o.name)
def test_gradcheck(opinfo, device):
    checked = 0
    for sample in _grad_samples(opinfo):
        args, _ = _run(opinfo, sample, D.float64, device, requires_grad=True)
        if not any(isinstance(a, tgrad.Tensor) and a.requires_grad for a in args):
            continue
        atol, rtol = opinfo.grad_tol
        assert tgrad.autograd.gradcheck(lambda *a: opinfo.op(*a, **sample.kwargs), tuple(args),
                                        atol=atol, rtol=rtol)
        checked += 1
    assert checked, f"{opinfo.name}: no sample small enough for gradcheck (a test that checks nothing)"


@pytest.mark.parametrize("opinfo", [o for o in OP_DB if o.gradgrad and o.grad and D.float64 in o.dtypes],
                         ids=lambda o: o.name)
def test_gradgradcheck(opinfo, device):
    samples = _grad_samples(opinfo)[:3]
    checked = 0
    for sample in samples:
        args, _ = _run(opinfo, sample, D.float64, device, requires_grad=True)
        if not any(isinstance(a, tgrad.Tensor) and a.requires_grad for a in args):
            continue
        atol, rtol = opinfo.grad_tol
        assert tgrad.autograd.gradgradcheck(lambda *a: opinfo.op(*a, **sample.kwargs), tuple(args),
                                            atol=atol, rtol=rtol)
        checked += 1
    assert checked, f"{opinfo.name}: no sample small enough for gradgradcheck (a test that checks nothing)"


def test_every_table_entry_is_tested(device):
    """The op table is the single list: each entry needs a forward test and, if it has a backward, a gradient test."""
    fwd, bwd = set(), set()

    def missing():
        return ([n for n in TABLE if n not in fwd and n not in COVERED_ELSEWHERE],
                [n for n, op in TABLE.items()
                 if op.backward is not None and n not in bwd and n not in COVERED_ELSEWHERE])

    dispatch.RECORD_FORWARD, dispatch.RECORD_BACKWARD = fwd, bwd
    try:
        for k in range(4):      # every OpInfo's k-th sample, until every entry has been reached
            if k and not any(missing()):
                break
            for o in OP_DB:
                samples = o.sample_inputs()
                if k >= len(samples):
                    continue
                sample, dt = samples[k], (D.float64 if D.float64 in o.dtypes else o.dtypes[0])
                args, out = _run(o, sample, dt, device, requires_grad=o.grad and dt.is_floating_point)
                outs = [t for t in (out if isinstance(out, tuple) else (out,)) if t.requires_grad]
                if outs:
                    ins = [a for a in args if isinstance(a, tgrad.Tensor) and a.requires_grad]
                    gos = [tgrad.ones_like(t).requires_grad_(o.gradgrad) for t in outs]
                    gs = tgrad.autograd.grad(outs, ins, grad_outputs=gos, create_graph=o.gradgrad,
                                             allow_unused=True)
                    gg = [g for g in gs if g is not None and g.requires_grad]
                    if o.gradgrad and gg:
                        tgrad.autograd.grad([g.sum() for g in gg], ins + gos, allow_unused=True)
    finally:
        dispatch.RECORD_FORWARD, dispatch.RECORD_BACKWARD = None, None
    missing_fwd, missing_bwd = (sorted(m) for m in missing())
    assert not missing_fwd, f"op-table entries without a forward test: {missing_fwd}"
    assert not missing_bwd, f"op-table entries whose backward no test runs: {missing_bwd}"
