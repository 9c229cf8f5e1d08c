"""layer_norm's and batch_norm's ATen-order backward sums (kernels/norm.py's ``_aten_vec_sums``) add each 8-lane
vector left to right with ``_lang.lanes_add``: one native pass on cpu (runtime/aten_cpu.c) gives the same bits as
the helper's Triton body run op by op (the traced path, which ``native._built["tgrad_aten_cpu"] = None`` selects),
with signed zeros (zero dy rows, negative weights), tails and several vector steps a row; and the layer_norm
backward's tape has no cumsum left (the scan it replaced cost most of the kernel).  Likewise the rows' moments in
ATen's order (``_aten_row_moments``: Welford chunks, their cascade, the tail, the lanes) as aten_cpu.c's
``row_moments``, in layer_norm's forward, its backward and the weight gradient's row statistics."""
import numpy as np
import pytest

import tgrad
from tgrad.kernels import norm as K
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels.runtime import native
from tgrad.kernels.runtime import trace as TR

CPU_ONLY = True
NATIVE = native.aten_ufunc("lanes_add") is not None
pytestmark = pytest.mark.skipif(not NATIVE, reason="no C compiler: no native helpers")
F = tgrad.nn.functional


def _same(a, b):
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def _layer_norm(M, K_, rng):
    x = rng.standard_normal((M, K_)).astype(np.float32)
    w = rng.standard_normal(K_).astype(np.float32)
    dy = rng.standard_normal((M, K_)).astype(np.float32)
    dy[0] = 0.0                         # dy w: +0 and -0 (negative weights)
    dy[-1, ::3] = -0.0
    xt, wt = tgrad.tensor(x, requires_grad=True), tgrad.tensor(w, requires_grad=True)
    F.layer_norm(xt, (K_,), wt, tgrad.tensor(np.zeros(K_, np.float32))).backward(tgrad.tensor(dy))
    return [xt.grad.numpy().copy()]


def _batch_norm(N, C, L, rng):
    x = rng.standard_normal((N, C, L)).astype(np.float32)
    dy = rng.standard_normal((N, C, L)).astype(np.float32)
    dy[0] = -0.0
    bn = tgrad.nn.BatchNorm1d(C)
    xt = tgrad.tensor(x, requires_grad=True)
    bn(xt).backward(tgrad.tensor(dy))
    return [xt.grad.numpy().copy(), bn.weight.grad.numpy().copy(), bn.bias.grad.numpy().copy()]


def _run(fn, args, kernel, native_on, monkeypatch):
    """(the outputs of 3 calls: interpreted, recorded, replayed; the kernel's tapes' source).  (batch_norm's
    kernels traced: their C twins, cnn_cpu.c, off.)"""
    TR.clear_tapes()
    prev = T.EXECUTOR
    outs = []
    with monkeypatch.context() as m:
        m.setattr(K, "cnn_twins", lambda: None)
        if not native_on:
            m.setitem(native._built, "tgrad_aten_cpu", None)
        try:
            T.EXECUTOR = "trace"
            for _ in range(3):
                outs.append(fn(*args, np.random.default_rng(sum(args))))
            src = "\n".join(v.source for k, v in TR._TAPES.items() if k[0] is kernel and v)
        finally:
            T.EXECUTOR = prev
            TR.clear_tapes()
    for o in outs[1:]:
        assert all(_same(a, b).all() for a, b in zip(outs[0], o))
    return outs[-1], src


@pytest.mark.parametrize("M,K_", [(5, 64), (3, 13), (4, 8), (2, 100), (3, 2000)])
def test_layer_norm_backward_native_equals_traced(M, K_, monkeypatch):
    got, src_n = _run(_layer_norm, (M, K_), K.layer_norm_backward_kernel, True, monkeypatch)
    want, src_t = _run(_layer_norm, (M, K_), K.layer_norm_backward_kernel, False, monkeypatch)
    for a, b in zip(got, want):
        assert _same(a, b).all()
    assert "cumsum" not in src_n and len(src_n.splitlines()) < len(src_t.splitlines())


@pytest.mark.parametrize("N,C,L", [(6, 3, 64), (4, 5, 21), (3, 2, 9)])
def test_batch_norm_backward_native_equals_traced(N, C, L, monkeypatch):
    got, src_n = _run(_batch_norm, (N, C, L), K.batch_norm_backward_kernel, True, monkeypatch)
    want, src_t = _run(_batch_norm, (N, C, L), K.batch_norm_backward_kernel, False, monkeypatch)
    for a, b in zip(got, want):
        assert _same(a, b).all()
    assert len(src_n.splitlines()) < len(src_t.splitlines())


def _layer_norm_moments(M, K_, rng):
    x = (rng.standard_normal((M, K_)) * 3 + 1).astype(np.float32)
    x[0] = 2.5                          # a constant row: variance 0
    x[-1, ::2] = -0.0
    w = rng.standard_normal(K_).astype(np.float32)
    xt, wt = tgrad.tensor(x, requires_grad=True), tgrad.tensor(w, requires_grad=True)
    y = F.layer_norm(xt, (K_,), wt, tgrad.tensor(np.ones(K_, np.float32)))
    y.backward(tgrad.tensor(rng.standard_normal((M, K_)).astype(np.float32)))
    return [y.detach().numpy().copy(), xt.grad.numpy().copy(), wt.grad.numpy().copy()]


# K: no vector, tails, one partial chunk, 2 chunks, 3 (odd cascade), 5, a power of 2 of chunks and one past it
@pytest.mark.parametrize("M,K_", [(3, 5), (9, 64), (4, 100), (3, 260), (2, 389), (2, 648), (2, 1024), (2, 1160)])
def test_layer_norm_moments_native_equals_traced(M, K_, monkeypatch):
    for kernel in (K.layer_norm_kernel, K.layer_norm_stats_kernel):
        got, src_n = _run(_layer_norm_moments, (M, K_), kernel, True, monkeypatch)
        want, src_t = _run(_layer_norm_moments, (M, K_), kernel, False, monkeypatch)
        for a, b in zip(got, want):
            assert _same(a, b).all()
        assert len(src_n.splitlines()) < len(src_t.splitlines())
