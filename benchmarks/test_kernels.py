"""pytest-benchmark per kernel: the ops of ``python -m tgrad.bench`` at a few sizes, float32, cpu.

GB/s and GFLOP/s of each case are in ``extra_info`` (``--benchmark-json``).
"""
import pytest

from tgrad import bench

SIZES = (4096, 65536)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", bench.OPS)
def test_kernel(benchmark, op, size):
    shape, nbytes, flops = bench.geometry(op, size, "float32")
    fn = bench._tgrad_fn(op, shape, "float32", "cpu")
    benchmark.pedantic(fn, rounds=20, warmup_rounds=3, iterations=1)
    benchmark.extra_info.update(shape=shape, bytes=nbytes, flops=flops)
    if benchmark.stats is not None:     # None under --benchmark-disable (CI's quick run: each case runs once)
        med = benchmark.stats.stats.median
        benchmark.extra_info.update(gbps=nbytes / med / 1e9, gflops=flops / med / 1e9)
