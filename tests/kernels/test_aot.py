"""Ahead-of-time compile of every kernel specialization the op database launches, for sm_80 and sm_90.

The same check as ``python -m tgrad.testing.aot_workload --arch 80 90`` (no GPU needed):
any compile failure fails, and so does a spill in an element-wise kernel or
a kernel that no workload launches.  Minutes on a cold Triton cache, seconds on a warm one.
"""
import importlib
import pkgutil

import pytest

import tgrad
import tgrad.kernels
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels import aot
from tgrad.testing import aot_workload

pytestmark = pytest.mark.aot

ELEMENTWISE = ("tgrad.kernels.elementwise", "tgrad.kernels.random")


@pytest.fixture(scope="module")
def recorded():
    return aot_workload.record()


@pytest.fixture(scope="module")
def compiled(recorded):
    specs, _ = recorded
    return aot.compile_all(aot.covering(specs), (80, 90))


def test_every_specialization_compiles(compiled):
    failed = [f"{r.spec.name} sm_{r.arch} [{' | '.join(r.spec.describe())}]: {r.error}" for r in compiled if r.error]
    assert not failed, "\n".join(failed)
    assert {r.arch for r in compiled} == {80, 90}


# (multinomial is a sort, not a map.)  2-D strided maps of three operands spilled 4-12 bytes on sm_80 at 1024
# elements a program: ``elementwise_block`` gives two dims 512.
SPILL_LIMIT = 0


def test_no_spills_in_elementwise_kernels(compiled):
    spills = [f"{r.spec.name} sm_{r.arch} [{' | '.join(r.spec.describe())}]: {r.spill_bytes} bytes"
              for r in compiled if r.spec.module in ELEMENTWISE and r.spec.name != "multinomial_kernel"
              and r.spill_bytes > SPILL_LIMIT]
    assert not spills, "\n".join(spills)
    assert all(r.registers > 0 for r in compiled if not r.error)


def _all_kernels():
    for m in pkgutil.iter_modules(tgrad.kernels.__path__):
        mod = importlib.import_module(f"tgrad.kernels.{m.name}")
        for name, obj in vars(mod).items():
            if name.endswith("_kernel") and aot._is_jit(obj) and obj.fn.__module__ == mod.__name__:
                yield obj


def test_workload_launches_every_kernel(recorded):
    specs, errors = recorded
    assert not errors, "\n".join(f"{label}: {type(e).__name__}: {e}" for label, e in errors)
    launched = {id(s.kernel) for s in specs}
    missing = sorted(f"{k.fn.__module__}.{k.__name__}" for k in _all_kernels() if id(k) not in launched)
    assert not missing, f"kernels no OpInfo sample launches (so never compiled ahead of time): {missing}"


def test_recorder_gives_triton_signature():
    x = tgrad.ones(4, 3, dtype=tgrad.float16)
    two = tgrad.full((), 2.0, dtype=tgrad.float16)   # (a Python 2.0 reaches a half mul as fp32, like PyTorch)
    T.RECORD = with_rec = T.SpecRecord()
    try:
        x.t() * two
    finally:
        T.RECORD = None
    (kernel, sig, cexpr, attrs), = with_rec
    assert kernel.__name__ == "binary_kernel"
    assert (sig["x_ptr"], sig["y_ptr"], sig["out_ptr"], sig["n_elements"]) == ("*fp16", "*fp16", "*fp16", "i32")
    assert sig["FN"] == "constexpr" and cexpr["FN"].__name__ == "mul_fn"
    assert cexpr["BLOCK"] == tgrad.kernels.elementwise.elementwise_block(12, "cpu")   # not forced: cpu block
    assert attrs[(0,)] == [["tt.divisibility", 16]]


def test_forced_gpu_blocks_only_while_recording():
    specs, _ = aot.record(lambda: [tgrad.ones(5000) + 1, tgrad.ones(3, 300).sum(1), tgrad.ones(3, 300).prod(1)])
    blocks = {s.name: s.constexprs for s in specs}
    assert blocks["binary_kernel"]["BLOCK"] == T.elementwise_block(5000, "cuda") == 1024
    assert blocks["accumulate_rows_kernel"]["ROWS"] == 1
    assert blocks["cascade_sum_kernel"]["ROWS"] == 1
    assert T.elementwise_block(5000, "cpu") == 8192
    assert (T.FORCE_GPU_BLOCKS, T.DRY_RUN, T.RECORD) == (False, False, None)


def test_covering_keeps_every_type_value_and_pair(recorded):
    specs, _ = recorded
    kept = aot.covering(specs)
    assert len(kept) < len(specs) / 2

    def seen(ss):
        args = {(s.name, n, t) for s in ss for n, t in s.signature.items()}
        values = {(s.name, k, aot._cval(v)) for s in ss for k, v in s.constexprs.items()}
        pairs = {(s.name, aot._cval(s.constexprs["FN"]), str(s.constexprs["COMPUTE"])) for s in ss
                 if "FN" in s.constexprs and "COMPUTE" in s.constexprs}
        return args, values, pairs
    assert seen(kept) == seen(specs)
    heaviest = max(s.constexprs.get("X_ND", 0) for s in specs if s.name == "binary_kernel")
    assert heaviest == 6 and any(s.constexprs.get("X_ND") == 6 for s in kept if s.name == "binary_kernel")
