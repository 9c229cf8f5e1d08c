"""The matmul kernel compiled ahead of time with GPU tiles: fp16/bf16 reach the tensor cores
(``mma`` on sm_80, ``wgmma`` on sm_90); fp32 is exact (no mma) unless tf32 is allowed; the heaviest
fused variants spill no registers. No GPU needed."""
import pytest
import triton.language as tl

from tgrad.kernels import matmul as KM
from tgrad.kernels.runtime import compile_aot
from tgrad.kernels.aot import ptxas_usage

DTYPES = {"*fp16": "float16", "*bf16": "bfloat16", "*fp32": "float32", "*fp64": "float64"}
INT_DTYPES = {"*i64": "int64", "*i32": "int32", "*i8": "int8", "*u8": "uint8"}


def _spec(ptr, precision="ieee", act=0, dact=0, rowsum=False, integer=False):
    sig = {}
    for p in KM.matmul_kernel.params:
        if p.is_constexpr:
            sig[p.name] = "constexpr"
        elif p.name.endswith("_ptr"):
            sig[p.name] = ptr
        elif p.name in ("alpha", "beta"):
            sig[p.name] = "i32" if integer else "fp32"
        else:
            sig[p.name] = "i32"
    bm, bn, bk = KM.tiles(512, 512, 512, "cuda", DTYPES.get(ptr) or INT_DTYPES[ptr])
    f64 = ptr == "*fp64"
    acc = tl.int64 if integer else tl.float64 if f64 else tl.float32
    cexpr = {"HAS_C": True, "ACT": act, "DACT": dact, "ROWSUM": rowsum, "ACC": acc,
             "UPCAST": f64,
             "PRECISION": precision, "BLOCK_B": 1, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}
    return sig, cexpr


@pytest.mark.parametrize("ptr", ["*fp16", "*bf16"])
@pytest.mark.parametrize("arch,instr", [(80, "mma"), (90, "wgmma")])
def test_half_precision_matmul_uses_tensor_cores(ptr, arch, instr):
    sig, cexpr = _spec(ptr)
    ptx = compile_aot(KM.matmul_kernel, sig, cexpr, arch).asm["ptx"]
    assert instr in ptx


@pytest.mark.parametrize("ptr", ["*fp16", "*bf16"])
def test_fused_linear_backward_kernel_uses_tensor_cores(ptr):
    sig, cexpr = _spec(ptr, dact=KM.ACTIVATIONS["gelu"], rowsum=True)
    assert "mma" in compile_aot(KM.matmul_kernel, sig, cexpr, 80).asm["ptx"]


def test_fp32_is_exact_by_default_and_tf32_on_request():
    sig, cexpr = _spec("*fp32")
    assert "mma" not in compile_aot(KM.matmul_kernel, sig, cexpr, 80).asm["ptx"]
    sig, cexpr = _spec("*fp32", precision="tf32")
    assert "mma" in compile_aot(KM.matmul_kernel, sig, cexpr, 80).asm["ptx"]


@pytest.mark.parametrize("ptr", list(DTYPES))
@pytest.mark.parametrize("arch", [80, 90])
def test_fused_variants_spill_nothing(ptr, arch):
    """Epilogue activation, act' prologue and row sums at once: a superset of every launched variant."""
    sig, cexpr = _spec(ptr, act=KM.ACTIVATIONS["tanh"], dact=KM.ACTIVATIONS["sigmoid"], rowsum=True)
    ptx = compile_aot(KM.matmul_kernel, sig, cexpr, arch).asm["ptx"]
    assert ptxas_usage(ptx, arch)[1] == 0


def test_cpu_batched_tiles_compile_too():
    """BLOCK_B > 1 (several batch entries per program) is chosen on cpu only, but stays GPU-compilable."""
    sig, cexpr = _spec("*fp32", act=KM.ACTIVATIONS["gelu"], dact=KM.ACTIVATIONS["tanh"], rowsum=True)
    cexpr.update(BLOCK_B=4, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    ptx = compile_aot(KM.matmul_kernel, sig, cexpr, 80).asm["ptx"]
    assert ptxas_usage(ptx, 80)[1] == 0


@pytest.mark.parametrize("ptr", list(INT_DTYPES))
@pytest.mark.parametrize("arch", [80, 90])
def test_integer_products_spill_nothing(ptr, arch):
    """Integers (int64 products summed over K, no tl.dot) with their GPU tiles."""
    sig, cexpr = _spec(ptr, integer=True)
    ptx = compile_aot(KM.matmul_kernel, sig, cexpr, arch).asm["ptx"]
    assert "mma" not in ptx and ptxas_usage(ptx, arch)[1] == 0
