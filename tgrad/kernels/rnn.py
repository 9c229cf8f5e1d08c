"""Fused recurrent-cell kernels: the pointwise part of one LSTM / GRU step, forward and backward.

The matmuls of a step (``x W_ih^T + b_ih``, ``h W_hh^T + b_hh``) are linear ops; these kernels take
their results, the gate pre-activations ``ig``/``hg`` of shape (B, G*H) in PyTorch's gate order
(LSTM i, f, g, o; GRU r, z, n), and do everything else in one pass.  Every (B, *) operand is
addressed through its (row, column) strides (0, 0 for a broadcast zero); outputs are contiguous.
Backward kernels recompute the gates.
A program covers a ROWS x BLOCK_H tile of the (B, H) grid (2-D: addresses affine in the aranges).
"""
import triton
import triton.language as tl

from .runtime import launcher as T
from .runtime import Launch, Sites, cdiv, gpu_blocks, next_pow2
from ._lang import cast_store, compute_type, kptr, sigmoid_h, tanh_h


@triton.jit
def _gate(p, b, j, s_r, s_c, g, H, m, COMPUTE: tl.constexpr):
    """Column g*H + j of row b of a (B, G*H) operand with strides (s_r, s_c), in COMPUTE."""
    return tl.load(p + b * s_r + (g * H + j) * s_c, mask=m, other=0.0).to(COMPUTE)


@triton.jit
def _pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, g, H, m, COMPUTE: tl.constexpr):
    """Pre-activation ig + hg of gate g."""
    return (_gate(ig_ptr, b, j, s_ig_r, s_ig_c, g, H, m, COMPUTE)
            + _gate(hg_ptr, b, j, s_hg_r, s_hg_c, g, H, m, COMPUTE))


@triton.jit
def lstm_cell_kernel(ig_ptr, hg_ptr, cx_ptr, hy_ptr, cy_ptr, B, H,
                     s_ig_r, s_ig_c, s_hg_r, s_hg_c, s_cx_r, s_cx_c,
                     COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """a = ig + hg (B, 4H); i, f, o = sigmoid(a_i, a_f, a_o), g = tanh(a_g);
    cy = f * cx + i * g, hy = o * tanh(cy); cx, hy, cy (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = (tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H))[None, :]
    m = (b < B) & (j < H)
    e = b * H + j
    i = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    f = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    g = tanh_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 2, H, m, COMPUTE))
    o = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 3, H, m, COMPUTE))
    c = tl.load(cx_ptr + b * s_cx_r + j * s_cx_c, mask=m, other=0.0).to(COMPUTE)
    cy = f * c + i * g
    cast_store(cy_ptr + e, cy, m)
    cast_store(hy_ptr + e, o * tanh_h(cy), m)


@triton.jit
def lstm_cell_backward_kernel(dh_ptr, dc_ptr, ig_ptr, hg_ptr, cx_ptr, dg_ptr, dcx_ptr, B, H,
                              s_dh_r, s_dh_c, s_dc_r, s_dc_c, s_ig_r, s_ig_c, s_hg_r, s_hg_c, s_cx_r, s_cx_c,
                              COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """dC = dcy + dhy * o * (1 - tanh(cy)^2); d(a_i, a_f, a_g, a_o) = (dC g i(1-i), dC cx f(1-f),
    dC i (1-g^2), dhy tanh(cy) o(1-o)) into dg (B, 4H); dcx = dC * f (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = (tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H))[None, :]
    m = (b < B) & (j < H)
    e = b * H + j
    i = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    f = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    g = tanh_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 2, H, m, COMPUTE))
    o = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 3, H, m, COMPUTE))
    c = tl.load(cx_ptr + b * s_cx_r + j * s_cx_c, mask=m, other=0.0).to(COMPUTE)
    dh = tl.load(dh_ptr + b * s_dh_r + j * s_dh_c, mask=m, other=0.0).to(COMPUTE)
    dc = tl.load(dc_ptr + b * s_dc_r + j * s_dc_c, mask=m, other=0.0).to(COMPUTE)
    tc = tanh_h(f * c + i * g)
    dC = dc + dh * o * (1.0 - tc * tc)
    row = dg_ptr + b * 4 * H + j
    cast_store(row, dC * g * i * (1.0 - i), m)
    cast_store(row + H, dC * c * f * (1.0 - f), m)
    cast_store(row + 2 * H, dC * i * (1.0 - g * g), m)
    cast_store(row + 3 * H, dh * tc * o * (1.0 - o), m)
    cast_store(dcx_ptr + e, dC * f, m)


@triton.jit
def gru_cell_kernel(ig_ptr, hg_ptr, hx_ptr, hy_ptr, B, H,
                    s_ig_r, s_ig_c, s_hg_r, s_hg_c, s_hx_r, s_hx_c,
                    COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """r = sigmoid(ig_r + hg_r), z = sigmoid(ig_z + hg_z), n = tanh(ig_n + r * hg_n);
    hy = (1 - z) * n + z * hx; ig, hg (B, 3H), hx, hy (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = (tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H))[None, :]
    m = (b < B) & (j < H)
    e = b * H + j
    r = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    z = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    hn = _gate(hg_ptr, b, j, s_hg_r, s_hg_c, 2, H, m, COMPUTE)
    n = tanh_h(_gate(ig_ptr, b, j, s_ig_r, s_ig_c, 2, H, m, COMPUTE) + r * hn)
    h = tl.load(hx_ptr + b * s_hx_r + j * s_hx_c, mask=m, other=0.0).to(COMPUTE)
    cast_store(hy_ptr + e, n + z * (h - n), m)


@triton.jit
def gru_cell_backward_kernel(dh_ptr, ig_ptr, hg_ptr, hx_ptr, dig_ptr, dhg_ptr, dhx_ptr, B, H,
                             s_dh_r, s_dh_c, s_ig_r, s_ig_c, s_hg_r, s_hg_c, s_hx_r, s_hx_c,
                             COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """dn = dhy (1 - z)(1 - n^2); dig = (dn hg_n r(1-r), dhy (hx - n) z(1-z), dn) and dhg the same
    but dn * r for n (B, 3H); dhx = dhy * z (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = (tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H))[None, :]
    m = (b < B) & (j < H)
    e = b * H + j
    r = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    z = sigmoid_h(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    hn = _gate(hg_ptr, b, j, s_hg_r, s_hg_c, 2, H, m, COMPUTE)
    n = tanh_h(_gate(ig_ptr, b, j, s_ig_r, s_ig_c, 2, H, m, COMPUTE) + r * hn)
    h = tl.load(hx_ptr + b * s_hx_r + j * s_hx_c, mask=m, other=0.0).to(COMPUTE)
    dh = tl.load(dh_ptr + b * s_dh_r + j * s_dh_c, mask=m, other=0.0).to(COMPUTE)
    dn = dh * (1.0 - z) * (1.0 - n * n)
    dr = dn * hn * r * (1.0 - r)
    dz = dh * (h - n) * z * (1.0 - z)
    off = b * 3 * H + j
    cast_store(dig_ptr + off, dr, m)
    cast_store(dig_ptr + off + H, dz, m)
    cast_store(dig_ptr + off + 2 * H, dn, m)
    cast_store(dhg_ptr + off, dr, m)
    cast_store(dhg_ptr + off + H, dz, m)
    cast_store(dhg_ptr + off + 2 * H, dn * r, m)
    cast_store(dhx_ptr + e, dh * z, m)


_SITES = Sites()


def _run(kernel, out, tensors, B, H):
    """Launch ``kernel`` over the (B, H) grid: pointers of ``tensors`` (inputs, then the contiguous
    outputs ``out``), n, H, then the (row, column) strides of every input."""
    if B * H == 0:
        return
    t0 = out[0]
    dev = t0._storage.launch_device
    ins = tensors[:len(tensors) - len(out)]
    strides = tuple(s for t in ins for s in t.stride())
    key = (kernel.__name__, B, H, strides, tuple(t.dtype for t in tensors), dev, T.FORCE_GPU_BLOCKS)
    site = _SITES.get(key)
    if site is None:
        budget = 1024 if gpu_blocks(dev) else 65536
        bh = min(next_pow2(H), budget)
        rows = max(1, min(next_pow2(B), budget // bh))
        site = _SITES.add(key, Launch(kernel, (cdiv(B, rows), cdiv(H, bh)), dev,
                                      [kptr(t) for t in tensors] + [B, H, *strides],
                                      {"COMPUTE": compute_type(t0.dtype), "ROWS": rows, "BLOCK_H": bh}))
    site(*(t.data_ptr() for t in tensors))


def lstm_cell(ig, hg, cx, hy, cy):
    """(hy, cy) from gate pre-activations ig, hg (B, 4H) and cx (B, H); hy, cy contiguous (B, H)."""
    _run(lstm_cell_kernel, (hy, cy), (ig, hg, cx, hy, cy), cx.shape[0], cx.shape[1])
    return hy, cy


def lstm_cell_backward(dh, dc, ig, hg, cx, dg, dcx):
    """dg (B, 4H) and dcx (B, H), contiguous, from dhy, dcy (B, H) and the forward's inputs."""
    _run(lstm_cell_backward_kernel, (dg, dcx), (dh, dc, ig, hg, cx, dg, dcx), cx.shape[0], cx.shape[1])
    return dg, dcx


def gru_cell(ig, hg, hx, hy):
    """hy (B, H) contiguous from gate pre-activations ig, hg (B, 3H) and hx (B, H)."""
    _run(gru_cell_kernel, (hy,), (ig, hg, hx, hy), hx.shape[0], hx.shape[1])
    return hy


def gru_cell_backward(dh, ig, hg, hx, dig, dhg, dhx):
    """dig, dhg (B, 3H) and dhx (B, H), contiguous, from dhy (B, H) and the forward's inputs."""
    _run(gru_cell_backward_kernel, (dig, dhg, dhx), (dh, ig, hg, hx, dig, dhg, dhx), hx.shape[0], hx.shape[1])
    return dig, dhg, dhx
