"""Discrete Fourier transforms along the last dim, as a GEMM against twiddles made in the kernel.

    out[b, j] = scale * sum_{i < N} w_i x[b, i] exp(SIGN 2 pi i i j / L),    j < M

x is complex (interleaved float pairs, rows of N), L the transform length (N < L reads x as zero-padded,
M < L keeps the first M outputs: the one-sided half).  C2R: w_i = 2 but for i = 0 and i = L / 2 (the
Hermitian half counted twice) and only the real part is stored; else w = 1 and the output is complex.  The
twiddle angle is 2 pi ((i j) mod L) / L from an exact integer product, reduced to its quadrant (``_cos_sin``).  O(N M) work per row: a direct DFT (any L), with
the four real products of each tile done by ``tl.dot`` in exact fp32 (fp64 for complex128).
"""
import triton
import triton.language as tl

from .runtime import Launch, Ptr, Sites, cdiv, elementwise_block, gpu_blocks, next_pow2
from ._lang import param_h, split64

@triton.jit
def _cos_sin(m, L, COMPUTE: tl.constexpr):
    """cos and sin of 2 pi m / L for integers 0 <= m < L: the quadrant q = floor(4 m / L) in integers, the angle
    pi/2 (4 m - q L) / L in [0, pi/2) (pi/2 split into two fp32 constants: float64-accurate for complex128), then
    rotated by q, so multiples of L/4 give 1, 0 and -1 exactly (fft(arange(4.)) has no 1e-7 imaginary parts)."""
    q = (4 * m) // L
    rem = (4 * m - q * L).to(COMPUTE)
    ang = rem * 1.5707963705062866 / L + rem * -4.371139000186122e-08 / L
    c0 = tl.cos(ang)
    s0 = tl.sin(ang)
    c = tl.where(q == 0, c0, tl.where(q == 1, -s0, tl.where(q == 2, -c0, s0)))
    s = tl.where(q == 0, s0, tl.where(q == 1, c0, tl.where(q == 2, -s0, -c0)))
    return c, s


@triton.jit
def dft_kernel(x_ptr, out_ptr, B, N, M, L, scale_hi, scale_lo,
               SIGN: tl.constexpr, C2R: tl.constexpr, COMPUTE: tl.constexpr,
               BLOCK_B: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr):
    """out (B, M) complex (C2R: real) = scale * x (B, N) complex @ twiddles (N, M); rows contiguous."""
    rb = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    rj = tl.program_id(1).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    ri = tl.arange(0, BLOCK_N).to(tl.int64)
    acc_r = tl.zeros((BLOCK_B, BLOCK_M), dtype=COMPUTE)
    acc_i = tl.zeros((BLOCK_B, BLOCK_M), dtype=COMPUTE)
    for i0 in range(0, N, BLOCK_N):
        ii = i0 + ri
        xm = (rb[:, None] < B) & (ii[None, :] < N)
        xo = (rb[:, None] * N + ii[None, :]) * 2
        xr = tl.load(x_ptr + xo, mask=xm, other=0.0).to(COMPUTE)
        xi = tl.load(x_ptr + xo + 1, mask=xm, other=0.0).to(COMPUTE)
        c, s = _cos_sin((ii[:, None] * rj[None, :]) % L, L, COMPUTE)
        if SIGN < 0:
            s = -s
        if C2R:
            w = tl.where((ii == 0) | (2 * ii == L), 1.0, 2.0).to(COMPUTE)
            c = c * w[:, None]
            s = s * w[:, None]
        # (xr + i xi)(c + i s) = (xr c - xi s) + i (xr s + xi c)
        acc_r += tl.dot(xr, c, input_precision="ieee", out_dtype=COMPUTE)
        acc_r -= tl.dot(xi, s, input_precision="ieee", out_dtype=COMPUTE)
        if not C2R:
            acc_i += tl.dot(xr, s, input_precision="ieee", out_dtype=COMPUTE)
            acc_i += tl.dot(xi, c, input_precision="ieee", out_dtype=COMPUTE)
    scale = param_h(scale_hi, scale_lo, acc_r)
    om = (rb[:, None] < B) & (rj[None, :] < M)
    if C2R:
        tl.store(out_ptr + rb[:, None] * M + rj[None, :], (acc_r * scale).to(out_ptr.dtype.element_ty), mask=om)
    else:
        oo = (rb[:, None] * M + rj[None, :]) * 2
        tl.store(out_ptr + oo, (acc_r * scale).to(out_ptr.dtype.element_ty), mask=om)
        tl.store(out_ptr + oo + 1, (acc_i * scale).to(out_ptr.dtype.element_ty), mask=om)


@triton.jit
def twiddle_kernel(y_ptr, z_ptr, n_elements, n1, n2, L, SIGN: tl.constexpr, COMPUTE: tl.constexpr,
                   BLOCK: tl.constexpr):
    """z[r, k1, j2] = y[r, j2, k1] exp(SIGN 2 pi i j2 k1 / L): the twiddle and transpose between the two passes of
    a four-step DFT of length L = n1 n2; y (R, n2, n1), z (R, n1, n2) complex, contiguous."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    j2 = idx % n2
    k1 = (idx // n2) % n1
    src = (idx // (n1 * n2)) * (n1 * n2) + j2 * n1 + k1
    yr = tl.load(y_ptr + 2 * src, mask=mask).to(COMPUTE)
    yi = tl.load(y_ptr + 2 * src + 1, mask=mask).to(COMPUTE)
    c, s = _cos_sin((j2 * k1) % L, L, COMPUTE)
    if SIGN < 0:
        s = -s
    tl.store(z_ptr + 2 * idx, (yr * c - yi * s).to(z_ptr.dtype.element_ty), mask=mask)
    tl.store(z_ptr + 2 * idx + 1, (yr * s + yi * c).to(z_ptr.dtype.element_ty), mask=mask)


@triton.jit
def chirp_kernel(x_ptr, out_ptr, n_elements, N, L, scale_hi, scale_lo,
                 SIGN: tl.constexpr, HAS_X: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """out[r, n] = scale x[r, n] b_n (HAS_X; else scale b_n) for rows of N, b_n = exp(SIGN pi i n^2 / L): the
    chirp of Bluestein's DFT, its angle from n^2 mod 2L in integers (``_cos_sin`` of length 2L)."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n_elements
    n = idx % N
    c, s = _cos_sin((n * n) % (2 * L), 2 * L, COMPUTE)
    if SIGN < 0:
        s = -s
    scale = param_h(scale_hi, scale_lo, c)
    if HAS_X:
        xr = tl.load(x_ptr + 2 * idx, mask=mask).to(COMPUTE)
        xi = tl.load(x_ptr + 2 * idx + 1, mask=mask).to(COMPUTE)
        re = xr * c - xi * s
        im = xr * s + xi * c
    else:
        re = c
        im = s
    tl.store(out_ptr + 2 * idx, (re * scale).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + 2 * idx + 1, (im * scale).to(out_ptr.dtype.element_ty), mask=mask)


_SITES = Sites()


def chirp(x, out, L, sign, scale=1.0):
    """out = scale * x * b (x None: scale * b) over contiguous complex rows of out's last dim N, b_n =
    exp(sign pi i n^2 / L) (``chirp_kernel``)."""
    n = out.numel()
    if n == 0:
        return out
    N = out._shape[-1]
    dev = out._storage.launch_device
    rdt = out.dtype.to_real()
    key = ("chirp", n, N, L, sign, x is not None, rdt, dev, gpu_blocks(dev))
    site = _SITES.get(key)
    if site is None:
        block = elementwise_block(n, dev)
        hi, lo = split64(1.0)
        site = _SITES.add(key, Launch(chirp_kernel, (cdiv(n, block),), dev,
                                      [Ptr((x if x is not None else out).data_ptr(), rdt.np),
                                       Ptr(out.data_ptr(), rdt.np), n, N, L, hi, lo],
                                      {"SIGN": sign, "HAS_X": x is not None,
                                       "COMPUTE": tl.float64 if rdt.name == "float64" else tl.float32,
                                       "BLOCK": block}))
    site((x if x is not None else out).data_ptr(), out.data_ptr(), *split64(float(scale)))
    return out


def twiddle(y, z, n1, n2, sign):
    """z = y's (R, n2, n1) rows transposed to (R, n1, n2) times the twiddles of length n1 n2 (``twiddle_kernel``)."""
    n = z.numel()
    if n == 0:
        return z
    dev = z._storage.launch_device
    rdt = y.dtype.to_real()
    key = ("tw", n, n1, n2, sign, rdt, dev, gpu_blocks(dev))
    site = _SITES.get(key)
    if site is None:
        block = elementwise_block(n, dev)
        site = _SITES.add(key, Launch(twiddle_kernel, (cdiv(n, block),), dev,
                                      [Ptr(y.data_ptr(), rdt.np), Ptr(z.data_ptr(), z.dtype.to_real().np), n, n1, n2,
                                       n1 * n2],
                                      {"SIGN": sign, "COMPUTE": tl.float64 if rdt.name == "float64" else tl.float32,
                                       "BLOCK": block}))
    site(y.data_ptr(), z.data_ptr())
    return z


def dft(x, out, L, sign, scale, c2r=False):
    """out = the DFT of contiguous complex x's rows (see the module docstring); out contiguous, (B, M) rows."""
    N = x._shape[-1] if x._shape else 1
    M = out._shape[-1] if out._shape else 1
    B = out.numel() // M if M else 0
    if B == 0 or M == 0:
        return out
    dev = out._storage.launch_device
    rdt = x.dtype.to_real()
    key = (B, N, M, L, sign, scale, c2r, rdt, dev, gpu_blocks(dev))
    site = _SITES.get(key)
    if site is None:
        if gpu_blocks(dev):
            bb, bn, bm = 16, 32, 32
        else:
            bm = max(16, min(next_pow2(M), 256))
            bn = max(16, min(next_pow2(N), 256))
            bb = max(16, min(next_pow2(B), max(16, 65536 // bm)))
        compute = tl.float64 if rdt.name == "float64" else tl.float32
        hi, lo = split64(float(scale))
        site = _SITES.add(key, Launch(dft_kernel, (cdiv(B, bb), cdiv(M, bm)), dev,
                                      [Ptr(x.data_ptr(), rdt.np), Ptr(out.data_ptr(), out.dtype.to_real().np),
                                       B, N, M, L, hi, lo],
                                      {"SIGN": sign, "C2R": bool(c2r), "COMPUTE": compute, "BLOCK_B": bb,
                                       "BLOCK_N": bn, "BLOCK_M": bm}))
    site(x.data_ptr(), out.data_ptr())
    return out
