"""Fused linear (matmul + bias + activation in one launch) against the unfused ops, on cpu.

    /work/venv/bin/pytest -q benchmarks/bench_linalg.py --benchmark-only

Forward and forward+backward of a 256x512 -> 256 relu layer; the launch counts are printed
with the timings (fused forward: 1 launch; unfused: mm + add + relu = 3).
"""
import pytest

import tgrad
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import launcher as T

pytest.importorskip("pytest_benchmark")


def _layer():
    g = tgrad.Generator().manual_seed(0)
    x = tgrad.randn(256, 512, generator=g, requires_grad=True)
    w = tgrad.randn(256, 512, generator=g, requires_grad=True)
    b = tgrad.randn(256, generator=g, requires_grad=True)
    return x, w, b


def fused(x, w, b):
    return dispatch.call("linear", x, w, b, activation="relu")


def unfused(x, w, b):
    return (x.mm(w.t()) + b).relu()


def _launches(fn, *args):
    T.COUNTER.enabled, T.COUNTER.counts = True, type(T.COUNTER.counts)()
    try:
        fn(*args)
        return sum(T.COUNTER.counts.values())
    finally:
        T.COUNTER.enabled = False


@pytest.mark.parametrize("fn", [fused, unfused])
def test_forward(benchmark, fn):
    x, w, b = _layer()
    with tgrad.no_grad():
        benchmark.extra_info["launches"] = _launches(fn, x, w, b)
        benchmark(fn, x, w, b)


@pytest.mark.parametrize("fn", [fused, unfused])
def test_forward_backward(benchmark, fn):
    x, w, b = _layer()

    def step():
        fn(x, w, b).sum().backward()
    benchmark.extra_info["launches"] = _launches(step)
    benchmark(step)
