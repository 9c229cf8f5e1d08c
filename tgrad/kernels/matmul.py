"""Matmul kernels: batched strided C = act(alpha * A @ B + beta * bias), one launcher.

One kernel serves mm, bmm, mv, dot, addmm, baddbmm and the fused ``linear``
(forward with its bias + activation epilogue; backward with the activation
derivative applied to A on load and the bias gradient as a row sum of A).
Operands are addressed through their strides (a transposed view costs no
copy; a broadcast batch dim has stride 0).  One program computes one
BLOCK_M x BLOCK_N output tile of one batch entry, looping over K.

Precision: ``tl.dot`` accumulates in fp32 (fp64 for doubles); fp32 inputs use
exact fp32 (``input_precision="ieee"``) unless the caller passes
``allow_tf32=True`` (the op layer passes ``tgrad.backends.cuda.matmul.allow_tf32``).  fp16/bf16 go to the
tensor cores as loaded on the GPU; on ``cpu`` they are upcast before
``tl.dot`` (the interpreter's bf16 dot is wrong, TRITON_NOTES.md).
Integer dtypes (ACC = int64) skip ``tl.dot`` (no int64, and int8 would
accumulate in int32): sum_k a[m, k] * b[k, n] in int64 over a 3-D block,
stored wrapped to the output's width like PyTorch's integer kernels.
"""
import triton
import triton.language as tl

from . import _geometry as G
from .runtime import launcher as T
from .runtime import Launch, Ptr, Sites, cdiv, gpu_blocks, next_pow2
from ._lang import cast_store, sigmoid_h, tanh_epilogue_h


# Activation codes (the ACT / DACT constexprs).
ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2, "tanh": 3, "sigmoid": 4}


@triton.jit
def _act(x, ACT: tl.constexpr):
    """Epilogue activation of the pre-activation z (fp32/fp64)."""
    if ACT == 1:
        x = tl.where(x > 0, x, 0.0)
    elif ACT == 2:
        x = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    elif ACT == 3:
        x = tanh_epilogue_h(x)
    elif ACT == 4:
        x = sigmoid_h(x)
    return x


@triton.jit
def _times_dact(g, v, ACT: tl.constexpr):
    """g * act'(z) from v: the output y for relu/tanh/sigmoid, the pre-activation z for gelu.  relu masks
    with where(v > 0, g, 0) as ReluBackward0 does (a non-finite g where v <= 0 gives 0, not nan)."""
    if ACT == 1:
        r = tl.where(v > 0, g, 0.0)
    elif ACT == 2:
        r = g * (0.5 * (1.0 + tl.math.erf(v * 0.7071067811865476)) + v * 0.3989422804014327 * tl.exp(-0.5 * v * v))
    elif ACT == 3:
        r = g * (1.0 - v * v)
    else:
        r = g * (v * (1.0 - v))
    return r


@triton.jit
def _round_to(x, dtype: tl.constexpr):
    """fp32/fp64 -> ``dtype`` rounding to nearest even on both devices (the interpreter truncates to bf16)."""
    if dtype == tl.bfloat16:
        bits = x.to(tl.uint32, bitcast=True)
        bits = bits + 0x7FFF + ((bits >> 16) & 1)
        return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    return x.to(dtype)


@triton.jit
def _scale_add(acc, alpha, beta, c_ptrs, mask, HAS_C: tl.constexpr, UNIT: tl.constexpr, ACC: tl.constexpr):
    """alpha * acc + beta * C.  UNIT: alpha is 1 and so is beta, if there is a C: products by 1 change no bit
    (two passes over the tile less on cpu)."""
    if not UNIT:
        acc = acc * alpha
    if HAS_C:
        c = tl.load(c_ptrs, mask=mask, other=0.0).to(ACC)
        if UNIT:
            acc += c
        else:
            acc += beta * c
    return acc


@triton.jit
def _batched_tiles(a_ptr, b_ptr, c_ptr, v_ptr, out_ptr, rs_ptr, NB, M, N, K, alpha, beta,
                   s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn, s_vb, s_vm, s_vk, s_ob, s_om, s_on,
                   HAS_C: tl.constexpr, UNIT: tl.constexpr, ACT: tl.constexpr, DACT: tl.constexpr,
                   ROWSUM: tl.constexpr, ACC: tl.constexpr, UPCAST: tl.constexpr, BLOCK_B: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """matmul_kernel's body over BLOCK_B batch entries at once: (BLOCK_B, BLOCK_M, BLOCK_N) tiles, 3-D dot."""
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    pid_n = pid % n_tiles
    rb = (tl.program_id(1).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B))[:, None, None]
    rm = ((pid // n_tiles).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M))[None, :, None]
    rn = (pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N))[None, None, :]
    rk = tl.arange(0, BLOCK_K).to(tl.int64)
    acc = tl.zeros((BLOCK_B, BLOCK_M, BLOCK_N), dtype=ACC)
    rsum = tl.zeros((BLOCK_B, BLOCK_M, 1), dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        kr = (k0 + rk)[None, None, :]
        kc = (k0 + rk)[None, :, None]
        a_mask = (rb < NB) & (rm < M) & (kr < K)
        a = tl.load(a_ptr + rb * s_ab + rm * s_am + kr * s_ak, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + rb * s_bb + kc * s_bk + rn * s_bn, mask=(rb < NB) & (kc < K) & (rn < N), other=0.0)
        if DACT != 0:
            v = tl.load(v_ptr + rb * s_vb + rm * s_vm + kr * s_vk, mask=a_mask, other=0.0).to(ACC)
            a = _round_to(_times_dact(a.to(ACC), v, DACT), a_ptr.dtype.element_ty)
        if UPCAST:
            a = a.to(ACC)
            b = b.to(ACC)
        if ROWSUM:
            rsum += tl.sum(a.to(ACC), axis=2, keep_dims=True)
        acc = tl.dot(a, b, acc, out_dtype=ACC)
    mask = (rb < NB) & (rm < M) & (rn < N)
    acc = _scale_add(acc, alpha, beta, c_ptr + rb * s_cb + rm * s_cm + rn * s_cn, mask, HAS_C, UNIT, ACC)
    cast_store(out_ptr + rb * s_ob + rm * s_om + rn * s_on, _act(acc, ACT), mask)
    if ROWSUM:
        if pid_n == 0:
            cast_store(rs_ptr + rb * M + rm, rsum, (rb < NB) & (rm < M))


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, v_ptr, out_ptr, rs_ptr,
                  NB, M, N, K, alpha, beta,
                  s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn,
                  s_vb, s_vm, s_vk, s_ob, s_om, s_on,
                  HAS_C: tl.constexpr, UNIT: tl.constexpr, ACT: tl.constexpr, DACT: tl.constexpr,
                  ROWSUM: tl.constexpr, ACC: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_B: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[b] = ACT(alpha * A'[b] @ B[b] + beta * C[b]) with A' = A * act'(V) when DACT != 0.

    A (M, K), B (K, N), C and out (M, N), V like A; NB batch entries, BLOCK_B of them per program
    along program_id(1) (BLOCK_B > 1: 3-D tiles, cpu only, where programs are what costs).
    ROWSUM: also rs[b, m] = sum_k A'[b, m, k] (written by the programs of the first column tile).
    """
    if BLOCK_B > 1:
        _batched_tiles(a_ptr, b_ptr, c_ptr, v_ptr, out_ptr, rs_ptr, NB, M, N, K, alpha, beta,
                       s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn, s_vb, s_vm, s_vk, s_ob, s_om, s_on,
                       HAS_C, UNIT, ACT, DACT, ROWSUM, ACC, UPCAST, BLOCK_B, BLOCK_M, BLOCK_N, BLOCK_K)
        return
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    n_tiles = tl.cdiv(N, BLOCK_N)
    pid_m = pid // n_tiles
    pid_n = pid % n_tiles
    rm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K).to(tl.int64)
    a_rows = a_ptr + bid * s_ab + rm[:, None] * s_am
    v_rows = v_ptr + bid * s_vb + rm[:, None] * s_vm
    b_cols = b_ptr + bid * s_bb + rn[None, :] * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    rsum = tl.zeros((BLOCK_M,), dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a_mask = (rm[:, None] < M) & (kk[None, :] < K)
        a = tl.load(a_rows + kk[None, :] * s_ak, mask=a_mask, other=0)
        b = tl.load(b_cols + kk[:, None] * s_bk, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        if ACC == tl.int64:
            # integers: exact products summed in int64 (wrapping; tl.dot has no int64)
            acc += tl.sum(a.to(tl.int64)[:, :, None] * b.to(tl.int64)[None, :, :], axis=1)
        else:
            if DACT != 0:
                v = tl.load(v_rows + kk[None, :] * s_vk, mask=a_mask, other=0.0).to(ACC)
                a = _round_to(_times_dact(a.to(ACC), v, DACT), a_ptr.dtype.element_ty)
            if UPCAST:
                a = a.to(ACC)
                b = b.to(ACC)
            if ROWSUM:
                rsum += tl.sum(a.to(ACC), axis=1)
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = _scale_add(acc, alpha, beta, c_ptr + bid * s_cb + rm[:, None] * s_cm + rn[None, :] * s_cn, mask, HAS_C,
                     UNIT, ACC)
    acc = _act(acc, ACT)
    cast_store(out_ptr + bid * s_ob + rm[:, None] * s_om + rn[None, :] * s_on, acc, mask)
    if ROWSUM:
        if pid_n == 0:
            cast_store(rs_ptr + bid * M + rm, rsum, rm < M)


_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _kptr(t):
    return Ptr(t.data_ptr(), t.dtype.np)


def _strides3(t, shape):
    """(batch, row, col) strides of ``t`` broadcast to ``shape`` (2-D or 3-D)."""
    st = G.expand_strides(t.shape, t.stride(), shape)
    return st if len(st) == 3 else [0] + st


def tiles(M, N, K, device, dtype_name):
    """(BLOCK_M, BLOCK_N, BLOCK_K): the whole problem in few tiles on cpu; on cuda 64x64x32 for the
    fp16/bf16 tensor cores, smaller for fp32/fp64 (FMA dot: larger tiles spill registers on sm_80/sm_90).
    Integers multiply a (BLOCK_M, BLOCK_K, BLOCK_N) int64 block and sum it over K: small K slices.
    cpu floats: K slices of up to 256 (they decide the rounding), output tiles up to 1024 a side and 2^18
    elements (a program per tile recomputes its operands' prologue, e.g. a fused activation's derivative).
    Neither can come from coarser buckets at no cost: the BLAS's bits depend on a GEMM's M and N (OpenBLAS picks
    its kernels by size), and a K padded to a bucket (16/128/256: a weight gradient's K is the batch) costs its
    prologue and row sums over the padding (4.6% of step (b)).  A padded K's GEMM multiplies the K extent alone
    (rounded up to 16, tape.py)."""
    if dtype_name not in _FLOATS:
        if gpu_blocks(device):
            return 16, 16, 16     # 72-96 registers, no spills on sm_80/sm_90
        bm, bn = min(next_pow2(M), 64), min(next_pow2(N), 64)
        return bm, bn, min(next_pow2(K), 2 ** 16 // (bm * bn))
    if gpu_blocks(device):
        return {"float32": (64, 64, 16), "float64": (32, 64, 32)}.get(dtype_name, (64, 64, 32))
    bm, bn = (max(16, min(next_pow2(d), 1024)) for d in (M, N))
    while bm * bn > 2 ** 18:
        if bm >= bn:
            bm //= 2
        else:
            bn //= 2
    return bm, bn, max(16, min(next_pow2(K), 256))



_SITES = Sites()


def matmul(a, b, out, *, c=None, alpha=1.0, beta=1.0, act=None, v=None, dact=None, rowsum=None, allow_tf32=False):
    """out = act(alpha * (a * act'(v)) @ b + beta * c) for 2-D or 3-D (batched) operands.

    a (B?, M, K), b (B?, K, N), out (B?, M, N); c broadcastable to out through
    its strides (bias: stride 0 over rows); v like a (the saved y or z of a
    fused linear); rowsum (B?, M) contiguous receives sum_k of a * act'(v).
    Shapes are checked by the caller; batch strides of 0 broadcast.  ``allow_tf32``: fp32 operands may
    use TF32 tensor cores on cuda.
    """
    oshape = out._shape
    if oshape[-2] == 0 or oshape[-1] == 0 or (len(oshape) == 3 and oshape[0] == 0):
        return out
    integer = a.dtype.name not in _FLOATS
    if integer:     # PyTorch converts alpha and beta to the integer type (truncating)
        alpha, beta = int(alpha), int(beta)
        scalars = ()
    else:
        alpha, beta = float(alpha), float(beta)
        scalars = (alpha, beta)
    has_c = c is not None and beta != 0
    unit = alpha == 1 and (beta == 1 or not has_c)
    c = c if has_c else out
    v = v if dact else a
    rs = rowsum if rowsum is not None else out
    tf32 = allow_tf32 and a.dtype.name == "float32"
    dev = out._storage.launch_device
    # everything the launch's arguments and constexprs depend on but the pointers and float alpha/beta
    # each operand's (shape, strides, dtype)
    key = ((a._shape, a._strides, a.dtype), (b._shape, b._strides, b.dtype), (oshape, out._strides, out.dtype),
           (c._shape, c._strides, c.dtype) if has_c else None, (v._shape, v._strides, v.dtype) if dact else None,
           rs.dtype if rowsum is not None else None, act, dact, unit if scalars else (alpha, beta), tf32,
           dev, T.FORCE_GPU_BLOCKS)
    site = _SITES.get(key) or _SITES.add(key, _launch_for(a, b, c, v, out, rs, alpha, beta, act, dact,
                                                           rowsum is not None, has_c, unit, tf32, dev))
    site(*[t._storage.ptr + t._offset * t.dtype.itemsize for t in (a, b, c, v, out, rs)], *scalars)  # data_ptr()
    return out


def _launch_for(a, b, c, v, out, rs, alpha, beta, act, dact, rowsum, has_c, unit, tf32, dev):
    M, N = out.shape[-2], out.shape[-1]
    K = a.shape[-1]
    batch = out.shape[0] if out.dim() == 3 else 1
    bm, bn, bk = tiles(M, N, K, dev, a.dtype.name)
    f64 = a.dtype.name == "float64"
    integer = a.dtype.name not in _FLOATS
    # cpu: several batch entries per program when the tiles are small (interpreted programs cost ~1 ms each)
    bb = 1 if gpu_blocks(dev) or integer else \
        min(next_pow2(batch), max(1, 2 ** 18 // max(bm * bk, bk * bn, bm * bn)))
    args = [_kptr(a), _kptr(b), _kptr(c), _kptr(v), _kptr(out), _kptr(rs), batch, M, N, K, alpha, beta]
    for t, shape in ((a, a.shape), (b, b.shape), (c, out.shape), (v, a.shape), (out, out.shape)):
        args += _strides3(t, shape)
    cexpr = {"HAS_C": has_c, "UNIT": unit, "ACT": ACTIVATIONS[act], "DACT": ACTIVATIONS[dact], "ROWSUM": rowsum,
             "ACC": tl.int64 if integer else tl.float64 if f64 else tl.float32, "UPCAST": not gpu_blocks(dev) or f64,
             "PRECISION": "tf32" if tf32 else "ieee", "BLOCK_B": bb, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}
    return Launch(matmul_kernel, (cdiv(M, bm) * cdiv(N, bn), cdiv(batch, bb)), dev, args, cexpr)


# ------------------------------------------------------------------ act_grad: g * f_k(v) (element-wise FNs)
# f_1 = act' expressed in v (y for relu/tanh/sigmoid, z for gelu), f_{k+1} = d f_k / dv; ``order`` = k in 1..3.
@triton.jit
def relu_dact_fn(g, v, order, p1):
    return tl.where(order == 1.0, tl.where(v > 0, g, 0.0), 0.0)


@triton.jit
def gelu_dact_fn(g, z, order, p1):
    phi = 0.3989422804014327 * tl.exp(-0.5 * z * z)
    d1 = 0.5 * (1.0 + tl.math.erf(z * 0.7071067811865476)) + z * phi
    return g * tl.where(order == 1.0, d1, tl.where(order == 2.0, phi * (2.0 - z * z), phi * z * (z * z - 4.0)))


@triton.jit
def tanh_dact_fn(g, y, order, p1):
    return g * tl.where(order == 1.0, 1.0 - y * y, tl.where(order == 2.0, -2.0 * y, -2.0))


@triton.jit
def sigmoid_dact_fn(g, y, order, p1):
    return g * tl.where(order == 1.0, y * (1.0 - y), tl.where(order == 2.0, 1.0 - 2.0 * y, -2.0))


DACT_FNS = {"relu": relu_dact_fn, "gelu": gelu_dact_fn, "tanh": tanh_dact_fn, "sigmoid": sigmoid_dact_fn}
