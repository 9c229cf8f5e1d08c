"""Mixed-precision kernel: the fused inf/NaN check and unscale of many gradients (GradScaler.unscale_).

PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``: g *= inv_scale in place for every gradient and
found_inf = 1 if any element of any of them is inf or NaN.  One launch covers up to ``MAX_TENSORS``
contiguous gradients of one dtype (slot t: address g_t, n_t elements, blocks of B_t; program i runs the
block of the slot its index falls in, as kernels/optim.py's multi-tensor kernel); inv_scale and found_inf
are 1-element fp32 tensors on the device, so no value goes back to the host.
"""
import triton
import triton.language as tl

from .. import dtypes as D
from ._lang import cast_store, compute_type
from .runtime import Launch, Ptr, Sites, cdiv, elementwise_block, gpu_blocks, next_pow2

MAX_TENSORS = 8


@triton.jit
def _unscale_block(g_ptr, n, i, inv, found_ptr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """Block i of one gradient: g *= inv; found = 1 if the block holds a non-finite value."""
    offs = i.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
    bad = tl.sum(((g != g) | (tl.abs(g) == float("inf"))).to(tl.int32), axis=0)
    cast_store(g_ptr + offs, g * inv, mask)
    tl.store(found_ptr, 1.0, mask=bad > 0)      # (a masked store, not an if: no control flow on data)


@triton.jit
def amp_unscale_kernel(found_ptr, inv_ptr, g0, n0, g1, n1, g2, n2, g3, n3, g4, n4, g5, n5, g6, n6, g7, n7,
                       COMPUTE: tl.constexpr, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr,
                       B3: tl.constexpr, B4: tl.constexpr, B5: tl.constexpr, B6: tl.constexpr, B7: tl.constexpr):
    """g_t *= inv_scale[0] for up to 8 gradients (g_t contiguous, n_t elements); found_inf[0] = 1 if any
    g_t holds inf or NaN (found_inf, inv_scale: fp32, 1 element)."""
    inv = tl.load(inv_ptr).to(COMPUTE)
    i = tl.program_id(0)
    e0 = tl.cdiv(n0, B0)
    e1 = e0 + tl.cdiv(n1, B1)
    e2 = e1 + tl.cdiv(n2, B2)
    e3 = e2 + tl.cdiv(n3, B3)
    e4 = e3 + tl.cdiv(n4, B4)
    e5 = e4 + tl.cdiv(n5, B5)
    e6 = e5 + tl.cdiv(n6, B6)
    if i < e0:
        _unscale_block(g0, n0, i, inv, found_ptr, COMPUTE, B0)
    elif i < e1:
        _unscale_block(g1, n1, i - e0, inv, found_ptr, COMPUTE, B1)
    elif i < e2:
        _unscale_block(g2, n2, i - e1, inv, found_ptr, COMPUTE, B2)
    elif i < e3:
        _unscale_block(g3, n3, i - e2, inv, found_ptr, COMPUTE, B3)
    elif i < e4:
        _unscale_block(g4, n4, i - e3, inv, found_ptr, COMPUTE, B4)
    elif i < e5:
        _unscale_block(g5, n5, i - e4, inv, found_ptr, COMPUTE, B5)
    elif i < e6:
        _unscale_block(g6, n6, i - e5, inv, found_ptr, COMPUTE, B6)
    else:
        _unscale_block(g7, n7, i - e6, inv, found_ptr, COMPUTE, B7)


_SITES = Sites()
_BLOCK_NAMES = tuple(f"B{t}" for t in range(MAX_TENSORS))


def non_finite_check_and_unscale(grads, found_inf, inv_scale):
    """Unscale ``grads`` (contiguous, one dtype and device) in place and flag non-finite values in found_inf."""
    dtype, dev = grads[0].dtype, grads[0]._storage.launch_device
    for start in range(0, len(grads), MAX_TENSORS):
        chunk = grads[start:start + MAX_TENSORS]
        sizes = tuple(g.numel() for g in chunk)
        key = (dtype, dev, gpu_blocks(dev), sizes)
        site = _SITES.get(key) or _SITES.add(key, _site(dtype, dev, sizes))
        dyn = [found_inf.data_ptr(), inv_scale.data_ptr()]
        for g in chunk:
            dyn += [g.data_ptr()]
        site(*dyn)


def _site(dtype, dev, sizes):
    gpu = gpu_blocks(dev)
    f32 = Ptr(0, D.float32.np)
    args = [f32, f32]
    for n in sizes:
        args += [Ptr(0, dtype.np), n]
    args += [Ptr(0, dtype.np), 0] * (MAX_TENSORS - len(sizes))
    blocks = [elementwise_block(n, dev) if gpu else min(elementwise_block(n, dev), next_pow2(max(n, 1)))
              for n in sizes]
    blocks += [elementwise_block(0, dev)] * (MAX_TENSORS - len(sizes))
    cexpr = dict(COMPUTE=compute_type(dtype), **dict(zip(_BLOCK_NAMES, blocks)))
    return Launch(amp_unscale_kernel, (sum(cdiv(n, b) for n, b in zip(sizes, blocks)),), dev, args, cexpr)
