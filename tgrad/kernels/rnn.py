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
from ._lang import cast_store, compute_type, kptr, sigmoid_h, sleef_exp, tanh_epilogue_h, tanh_h
from .runtime.native import elementwise, native_helper, rule_broadcast


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
def _sigmoid(x):
    """ATen's cpu sigmoid: float32 as 1 / (1 + exp(-x)) with SLEEF's expf_u10 (kernels/activation.py)."""
    if x.dtype == tl.float32:
        return 1.0 / (1.0 + sleef_exp(-x))
    return sigmoid_h(x)


@triton.jit
def _tanh(x):
    """ATen's cpu tanh: float32 rounded from float64 (as SLEEF's tanhf_u10 nearly always is)."""
    if x.dtype == tl.float32:
        return tanh_h(x.to(tl.float64)).to(tl.float32)
    return tanh_h(x)


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
    i = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    f = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    g = _tanh(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 2, H, m, COMPUTE))
    o = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 3, H, m, COMPUTE))
    c = tl.load(cx_ptr + b * s_cx_r + j * s_cx_c, mask=m, other=0.0).to(COMPUTE)
    cy = f * c + i * g
    cast_store(cy_ptr + e, cy, m)
    cast_store(hy_ptr + e, o * _tanh(cy), m)


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
    i = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    f = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    g = _tanh(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 2, H, m, COMPUTE))
    o = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 3, H, m, COMPUTE))
    c = tl.load(cx_ptr + b * s_cx_r + j * s_cx_c, mask=m, other=0.0).to(COMPUTE)
    dh = tl.load(dh_ptr + b * s_dh_r + j * s_dh_c, mask=m, other=0.0).to(COMPUTE)
    dc = tl.load(dc_ptr + b * s_dc_r + j * s_dc_c, mask=m, other=0.0).to(COMPUTE)
    tc = _tanh(f * c + i * g)
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
    r = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    z = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    hn = _gate(hg_ptr, b, j, s_hg_r, s_hg_c, 2, H, m, COMPUTE)
    n = _tanh(_gate(ig_ptr, b, j, s_ig_r, s_ig_c, 2, H, m, COMPUTE) + r * hn)
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
    r = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 0, H, m, COMPUTE))
    z = _sigmoid(_pre(ig_ptr, hg_ptr, b, j, s_ig_r, s_ig_c, s_hg_r, s_hg_c, 1, H, m, COMPUTE))
    hn = _gate(hg_ptr, b, j, s_hg_r, s_hg_c, 2, H, m, COMPUTE)
    n = _tanh(_gate(ig_ptr, b, j, s_ig_r, s_ig_c, 2, H, m, COMPUTE) + r * hn)
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


# ------------------------------------------------------------------ a whole layer-direction per launch
# LSTM, GRU and Elman RNN layers.  A program runs its rows of the batch through all T steps (h, c stay in registers; h W_hh^T is tl.dot on the
# four (H, H) gate blocks of W_hh, loaded once).  tanh is tanh_epilogue_h: 7 operations instead of tanh_h's
# ~28 (the step's cost on cpu is its operation count), within 1e-7 absolute of tanh in float32.
@triton.jit
def _wt(w_ptr, g, j, k, H, s_wr, s_wc, m, COMPUTE: tl.constexpr):
    """Gate g's block of W_hh (4H, H) as W[g*H + j, k]: (BH, 1) j and (1, BH) k give W_g, swapped W_g^T."""
    return tl.load(w_ptr + (g * H + j) * s_wr + k * s_wc, mask=m, other=0.0).to(COMPUTE)


@triton.jit
def _dot(a, w, w_ptr, g, j, k, H, s_wr, s_wc, m, acc, COMPUTE: tl.constexpr, RELOAD_W: tl.constexpr):
    """acc + a @ w, w gate g's block held in registers, or (RELOAD_W: GPU, where four (H, H) blocks would
    spill) loaded again from the cache-resident weight."""
    if RELOAD_W:
        w = _wt(w_ptr, g, j, k, H, s_wr, s_wc, m, COMPUTE)
    return tl.dot(a, w, acc, input_precision="ieee")


@triton.jit
def _back_step(s, T, REVERSE: tl.constexpr):
    """Step s of a backward through time: (t, first, tp), t = T-1..0 (0..T-1 if REVERSE); ``first``: t is the
    recurrence's first step (its previous state is the initial one); tp: the step before t (clamped in range)."""
    t = T - 1 - s
    first = t == 0
    tp = t - 1 + first
    if REVERSE:
        t = s
        first = t == T - 1
        tp = t + 1 - first
    return t, first, tp


@native_helper("lstm_tanh_f32", elementwise)
@triton.jit
def _tanh_s(x):
    """tanh(x) = 2 sigmoid(2x) - 1 (5 operations; within 1e-7 absolute of tanh in float32, as tanh_epilogue_h)."""
    return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0


@native_helper("lstm_gate_f32", rule_broadcast)
@triton.jit
def _gate_act(a, scale, mul, add):
    """sigmoid(-a scale) mul + add: the i, f, o gates (scale -1, mul 1, add 0) and g = tanh(a) as 2 sigmoid(2a) - 1."""
    return (1.0 / (1.0 + tl.exp(a * scale))) * mul + add


@native_helper("lstm_dc_f32", rule_broadcast)
@triton.jit
def _cell_grad(dc, dh, o, tc):
    """dC = dc + dh o (1 - tanh(c)^2): the cell state's gradient at a time step."""
    return dc + dh * o * (1.0 - tc * tc)


@native_helper("lstm_gate_grad_f32", rule_broadcast)
@triton.jit
def _gate_grad(x, a, one_g):
    """x (a + one_g) (1 - a): the gates' activation derivatives (a (1 - a); (1 + g)(1 - g) where one_g is 1)."""
    return x * ((a + one_g) * (1.0 - a))


@triton.jit
def _gates(a, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """The four gates (ROWS, BLOCK_H) of a (ROWS, 4, BLOCK_H) tile, gate index 2 g1 + g0 split as two halves."""
    p = tl.permute(tl.reshape(a, (ROWS, 2, 2, BLOCK_H)), (0, 3, 1, 2))
    e0, e1 = tl.split(p)
    g0, g2 = tl.split(e0)
    g1, g3 = tl.split(e1)
    return g0, g1, g2, g3


@triton.jit
def _lstm_tile_forward(gi_ptr, w_ptr, b_ptr, h0_ptr, c0_ptr, y_ptr, hn_ptr, cn_ptr, cs_ptr, gs_ptr, T, B, H,
                       s_gt, s_gb, s_gc, s_wr, s_wc, s_b, s_h0b, s_h0c, s_c0b, s_c0c, s_yt, s_yb,
                       REVERSE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """lstm_layer_kernel with the four gates as one (ROWS, 4, BLOCK_H) tile (GATE_TILE, cpu): one tl.dot on
    W_hh^T as (BLOCK_H, 4 BLOCK_H), one load, activation and store of all gates per step (the interpreter
    pays per operation); tanh(a_g) = 2 sigmoid(2 a_g) - 1."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    m = (b < B) & (j < H)
    b3 = b[:, :, None]
    q = tl.arange(0, 4)[None, :, None]
    j3 = tl.arange(0, BLOCK_H)[None, None, :]
    k3 = tl.arange(0, BLOCK_H)[:, None, None]
    m3 = (b3 < B) & (j3 < H)
    w = tl.reshape(_wt(w_ptr, q, j3, k3, H, s_wr, s_wc, (k3 < H) & (j3 < H), COMPUTE), (BLOCK_H, 4 * BLOCK_H))
    bias = tl.zeros((ROWS, 4, BLOCK_H), COMPUTE) + tl.load(b_ptr + (q * H + j3) * s_b, mask=j3 < H,
                                                           other=0.0).to(COMPUTE)
    bias = tl.reshape(bias, (ROWS, 4 * BLOCK_H))
    is_g = q == 2
    scale = tl.where(is_g, -2.0, -1.0)            # sigmoid(a), and sigmoid(2a) for the g gate
    mul = tl.where(is_g, 2.0, 1.0)
    add = tl.where(is_g, -1.0, 0.0)
    h = tl.load(h0_ptr + b * s_h0b + j * s_h0c, mask=m, other=0.0).to(COMPUTE)
    c = tl.load(c0_ptr + b * s_c0b + j * s_c0c, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t = s
        if REVERSE:
            t = T - 1 - s
        a = (tl.load(gi_ptr + t * s_gt + b3 * s_gb + (q * H + j3) * s_gc, mask=m3, other=0.0).to(COMPUTE)
             + tl.reshape(tl.dot(h, w, bias, input_precision="ieee"), (ROWS, 4, BLOCK_H)))
        act = _gate_act(a, scale, mul, add)
        cast_store(gs_ptr + (t * B + b3) * 4 * H + q * H + j3, act, m3)
        i, f, g, o = _gates(act, ROWS, BLOCK_H)
        c = f * c + i * g
        h = o * _tanh_s(c)
        cast_store(y_ptr + t * s_yt + b * s_yb + j, h, m)
        cast_store(cs_ptr + (t * B + b) * H + j, c, m)
    cast_store(hn_ptr + b * H + j, h, m)
    cast_store(cn_ptr + b * H + j, c, m)


@triton.jit
def _lstm_tile_backward(dy_ptr, dhn_ptr, dcn_ptr, w_ptr, c0_ptr, cs_ptr, gs_ptr, dg_ptr, dh0_ptr, dc0_ptr,
                        T, B, H, s_dyt, s_dyb, s_dyc, s_dhb, s_dhc, s_dcb, s_dcc, s_wr, s_wc, s_c0b, s_c0c,
                        s_dgt, s_dgb, REVERSE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                        BLOCK_H: tl.constexpr):
    """lstm_layer_backward_kernel with the gates as one tile (GATE_TILE, cpu): dgates[t] = X * Y with
    X = (dC g, dC c_{t-1}, dC i, dh tanh(c_t)), Y = (a (1-a) for i, f, o; (1+g)(1-g) for g); one tl.dot on
    W_hh as (4 BLOCK_H, BLOCK_H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    m = (b < B) & (j < H)
    b3 = b[:, :, None]
    q = tl.arange(0, 4)[None, :, None]
    j3 = tl.arange(0, BLOCK_H)[None, None, :]
    m3 = (b3 < B) & (j3 < H)
    qw = tl.arange(0, 4)[:, None, None]
    kw = tl.arange(0, BLOCK_H)[None, :, None]
    jw = tl.arange(0, BLOCK_H)[None, None, :]
    w = tl.reshape(_wt(w_ptr, qw, kw, jw, H, s_wr, s_wc, (kw < H) & (jw < H), COMPUTE), (4 * BLOCK_H, BLOCK_H))
    one_g = tl.where(q == 2, 1.0, 0.0)
    dh = tl.load(dhn_ptr + b * s_dhb + j * s_dhc, mask=m, other=0.0).to(COMPUTE)
    dc = tl.load(dcn_ptr + b * s_dcb + j * s_dcc, mask=m, other=0.0).to(COMPUTE)
    c0 = tl.load(c0_ptr + b * s_c0b + j * s_c0c, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t, first, tp = _back_step(s, T, REVERSE)
        dh += tl.load(dy_ptr + t * s_dyt + b * s_dyb + j * s_dyc, mask=m, other=0.0).to(COMPUTE)
        act = tl.load(gs_ptr + (t * B + b3) * 4 * H + q * H + j3, mask=m3, other=0.0).to(COMPUTE)
        i, f, g, o = _gates(act, ROWS, BLOCK_H)
        tc = _tanh_s(tl.load(cs_ptr + (t * B + b) * H + j, mask=m, other=0.0).to(COMPUTE))
        cp = tl.load(cs_ptr + (tp * B + b) * H + j, mask=m, other=0.0).to(COMPUTE)
        cp = tl.where(first, c0, cp)
        dC = _cell_grad(dc, dh, o, tc)
        x = tl.join(tl.join(dC * g, dC * cp), tl.join(dC * i, dh * tc))     # (ROWS, BLOCK_H, g0, g1)
        x = tl.reshape(tl.permute(x, (0, 3, 2, 1)), (ROWS, 4, BLOCK_H))
        d = _gate_grad(x, act, one_g)
        cast_store(dg_ptr + t * s_dgt + b3 * s_dgb + q * H + j3, d, m3)
        dc = dC * f
        dh = tl.dot(tl.reshape(d, (ROWS, 4 * BLOCK_H)), w, input_precision="ieee")
    cast_store(dh0_ptr + b * H + j, dh, m)
    cast_store(dc0_ptr + b * H + j, dc, m)


@triton.jit
def lstm_layer_kernel(gi_ptr, w_ptr, b_ptr, h0_ptr, c0_ptr, y_ptr, hn_ptr, cn_ptr, cs_ptr, gs_ptr, T, B, H,
                      s_gt, s_gb, s_gc, s_wr, s_wc, s_b, s_h0b, s_h0c, s_c0b, s_c0c, s_yt, s_yb,
                      REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                      RELOAD_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr, GATE_TILE: tl.constexpr = False):
    """For t = 0..T-1 (T-1..0 if REVERSE): a = gi[t] + (h W_hh^T + b_hh) (B, 4H); i, f, o = sigmoid, g = tanh;
    c = f c + i g, h = o tanh(c); y[t] = h (T, B, H); cs[t] = c, gs[t] = (i, f, g, o) for the backward."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    k = tl.arange(0, BLOCK_H)[:, None]
    m = (b < B) & (j < H)
    wm = (k < H) & (j < H)
    if GATE_TILE:
        _lstm_tile_forward(gi_ptr, w_ptr, b_ptr, h0_ptr, c0_ptr, y_ptr, hn_ptr, cn_ptr, cs_ptr, gs_ptr, T, B, H,
                           s_gt, s_gb, s_gc, s_wr, s_wc, s_b, s_h0b, s_h0c, s_c0b, s_c0c, s_yt, s_yb,
                           REVERSE, COMPUTE, ROWS, BLOCK_H)
        return
    wi = _wt(w_ptr, 0, j, k, H, s_wr, s_wc, wm, COMPUTE)
    wf = _wt(w_ptr, 1, j, k, H, s_wr, s_wc, wm, COMPUTE)
    wg = _wt(w_ptr, 2, j, k, H, s_wr, s_wc, wm, COMPUTE)
    wo = _wt(w_ptr, 3, j, k, H, s_wr, s_wc, wm, COMPUTE)
    bm = j < H                                    # b_hh broadcast once: the accumulator tl.dot adds h W^T to
    zero = tl.zeros((ROWS, BLOCK_H), COMPUTE)
    bi = zero + tl.load(b_ptr + j * s_b, mask=bm, other=0.0).to(COMPUTE)
    bf = zero + tl.load(b_ptr + (H + j) * s_b, mask=bm, other=0.0).to(COMPUTE)
    bg = zero + tl.load(b_ptr + (2 * H + j) * s_b, mask=bm, other=0.0).to(COMPUTE)
    bo = zero + tl.load(b_ptr + (3 * H + j) * s_b, mask=bm, other=0.0).to(COMPUTE)
    h = tl.load(h0_ptr + b * s_h0b + j * s_h0c, mask=m, other=0.0).to(COMPUTE)
    c = tl.load(c0_ptr + b * s_c0b + j * s_c0c, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t = s
        if REVERSE:
            t = T - 1 - s
        gp = gi_ptr + t * s_gt + b * s_gb + j * s_gc
        i = sigmoid_h(tl.load(gp, mask=m, other=0.0).to(COMPUTE)
                      + _dot(h, wi, w_ptr, 0, j, k, H, s_wr, s_wc, wm, bi, COMPUTE, RELOAD_W))
        f = sigmoid_h(tl.load(gp + H * s_gc, mask=m, other=0.0).to(COMPUTE)
                      + _dot(h, wf, w_ptr, 1, j, k, H, s_wr, s_wc, wm, bf, COMPUTE, RELOAD_W))
        g = tanh_epilogue_h(tl.load(gp + 2 * H * s_gc, mask=m, other=0.0).to(COMPUTE)
                   + _dot(h, wg, w_ptr, 2, j, k, H, s_wr, s_wc, wm, bg, COMPUTE, RELOAD_W))
        o = sigmoid_h(tl.load(gp + 3 * H * s_gc, mask=m, other=0.0).to(COMPUTE)
                      + _dot(h, wo, w_ptr, 3, j, k, H, s_wr, s_wc, wm, bo, COMPUTE, RELOAD_W))
        c = f * c + i * g
        h = o * tanh_epilogue_h(c)      # 0 in masked-off lanes (their gate inputs and c are 0)
        cast_store(y_ptr + t * s_yt + b * s_yb + j, h, m)
        e = (t * B + b) * H + j
        cast_store(cs_ptr + e, c, m)
        q = (t * B + b) * 4 * H + j
        cast_store(gs_ptr + q, i, m)
        cast_store(gs_ptr + q + H, f, m)
        cast_store(gs_ptr + q + 2 * H, g, m)
        cast_store(gs_ptr + q + 3 * H, o, m)
    cast_store(hn_ptr + b * H + j, h, m)
    cast_store(cn_ptr + b * H + j, c, m)


@triton.jit
def lstm_layer_backward_kernel(dy_ptr, dhn_ptr, dcn_ptr, w_ptr, c0_ptr, cs_ptr, gs_ptr, dg_ptr, dh0_ptr, dc0_ptr,
                               T, B, H, s_dyt, s_dyb, s_dyc, s_dhb, s_dhc, s_dcb, s_dcc, s_wr, s_wc, s_c0b, s_c0c,
                               s_dgt, s_dgb, REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                               RELOAD_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr,
                               GATE_TILE: tl.constexpr = False):
    """Backward through time from dh = dh_n, dc = dc_n: dh += dy[t]; dC = dc + dh o (1 - tanh(c_t)^2);
    dgates[t] = (dC g i(1-i), dC c_{t-1} f(1-f), dC i (1-g^2), dh tanh(c_t) o(1-o)) (T, B, 4H);
    dc = dC f, dh = dgates[t] W_hh; finally dh0, dc0 (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    k = tl.arange(0, BLOCK_H)[:, None]
    m = (b < B) & (j < H)
    wm = (k < H) & (j < H)
    if GATE_TILE:
        _lstm_tile_backward(dy_ptr, dhn_ptr, dcn_ptr, w_ptr, c0_ptr, cs_ptr, gs_ptr, dg_ptr, dh0_ptr, dc0_ptr,
                            T, B, H, s_dyt, s_dyb, s_dyc, s_dhb, s_dhc, s_dcb, s_dcc, s_wr, s_wc, s_c0b, s_c0c,
                            s_dgt, s_dgb, REVERSE, COMPUTE, ROWS, BLOCK_H)
        return
    wi = _wt(w_ptr, 0, k, j, H, s_wr, s_wc, wm, COMPUTE)        # (dead code when RELOAD_W)
    wf = _wt(w_ptr, 1, k, j, H, s_wr, s_wc, wm, COMPUTE)
    wg = _wt(w_ptr, 2, k, j, H, s_wr, s_wc, wm, COMPUTE)
    wo = _wt(w_ptr, 3, k, j, H, s_wr, s_wc, wm, COMPUTE)
    dh = tl.load(dhn_ptr + b * s_dhb + j * s_dhc, mask=m, other=0.0).to(COMPUTE)
    dc = tl.load(dcn_ptr + b * s_dcb + j * s_dcc, mask=m, other=0.0).to(COMPUTE)
    c0 = tl.load(c0_ptr + b * s_c0b + j * s_c0c, mask=m, other=0.0).to(COMPUTE)
    zero = tl.zeros((ROWS, BLOCK_H), COMPUTE)
    for s in range(T):
        t, first, tp = _back_step(s, T, REVERSE)
        dh += tl.load(dy_ptr + t * s_dyt + b * s_dyb + j * s_dyc, mask=m, other=0.0).to(COMPUTE)
        q = gs_ptr + (t * B + b) * 4 * H + j
        i = tl.load(q, mask=m, other=0.0).to(COMPUTE)
        f = tl.load(q + H, mask=m, other=0.0).to(COMPUTE)
        g = tl.load(q + 2 * H, mask=m, other=0.0).to(COMPUTE)
        o = tl.load(q + 3 * H, mask=m, other=0.0).to(COMPUTE)
        tc = tanh_epilogue_h(tl.load(cs_ptr + (t * B + b) * H + j, mask=m, other=0.0).to(COMPUTE))
        cp = tl.load(cs_ptr + (tp * B + b) * H + j, mask=m, other=0.0).to(COMPUTE)
        cp = tl.where(first, c0, cp)
        dC = _cell_grad(dc, dh, o, tc)
        di = dC * g * i * (1.0 - i)
        df = dC * cp * f * (1.0 - f)
        dgg = dC * i * (1.0 - g * g)
        do = dh * tc * o * (1.0 - o)
        row = dg_ptr + t * s_dgt + b * s_dgb + j
        cast_store(row, di, m)
        cast_store(row + H, df, m)
        cast_store(row + 2 * H, dgg, m)
        cast_store(row + 3 * H, do, m)
        dc = dC * f
        dh = _dot(di, wi, w_ptr, 0, k, j, H, s_wr, s_wc, wm, zero, COMPUTE, RELOAD_W)
        dh = _dot(df, wf, w_ptr, 1, k, j, H, s_wr, s_wc, wm, dh, COMPUTE, RELOAD_W)
        dh = _dot(dgg, wg, w_ptr, 2, k, j, H, s_wr, s_wc, wm, dh, COMPUTE, RELOAD_W)
        dh = _dot(do, wo, w_ptr, 3, k, j, H, s_wr, s_wc, wm, dh, COMPUTE, RELOAD_W)
    cast_store(dh0_ptr + b * H + j, dh, m)
    cast_store(dc0_ptr + b * H + j, dc, m)


@triton.jit
def _act(a, RELU: tl.constexpr):
    """relu(a) or tanh(a) (an Elman RNN's nonlinearity)."""
    if RELU:
        return tl.maximum(a, 0.0)
    return tanh_epilogue_h(a)


@triton.jit
def rnn_layer_kernel(gi_ptr, w_ptr, b_ptr, h0_ptr, y_ptr, hn_ptr, T, B, H,
                     s_gt, s_gb, s_gc, s_wr, s_wc, s_b, s_h0b, s_h0c, s_yt, s_yb,
                     RELU: tl.constexpr, REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                     RELOAD_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """For t = 0..T-1 (T-1..0 if REVERSE): h = act(gi[t] + h W_hh^T + b_hh) (act tanh, or relu if RELU);
    gi (T, B, H), W_hh (H, H); y[t] = h (T, B, H), hn = the last h (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    k = tl.arange(0, BLOCK_H)[:, None]
    m = (b < B) & (j < H)
    wm = (k < H) & (j < H)
    w = _wt(w_ptr, 0, j, k, H, s_wr, s_wc, wm, COMPUTE)
    bias = tl.zeros((ROWS, BLOCK_H), COMPUTE) + tl.load(b_ptr + j * s_b, mask=j < H, other=0.0).to(COMPUTE)
    h = tl.load(h0_ptr + b * s_h0b + j * s_h0c, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t = s
        if REVERSE:
            t = T - 1 - s
        a = tl.load(gi_ptr + t * s_gt + b * s_gb + j * s_gc, mask=m, other=0.0).to(COMPUTE)
        h = _act(a + _dot(h, w, w_ptr, 0, j, k, H, s_wr, s_wc, wm, bias, COMPUTE, RELOAD_W), RELU)
        cast_store(y_ptr + t * s_yt + b * s_yb + j, h, m)
    cast_store(hn_ptr + b * H + j, h, m)


@triton.jit
def rnn_layer_backward_kernel(dy_ptr, dhn_ptr, w_ptr, y_ptr, dg_ptr, dh0_ptr, T, B, H,
                              s_dyt, s_dyb, s_dyc, s_dhb, s_dhc, s_wr, s_wc, s_yt, s_yb, s_yc, s_dgt, s_dgb,
                              RELU: tl.constexpr, REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                              RELOAD_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """Backward through time from dh = dh_n: dh += dy[t]; da[t] = dh (1 - y[t]^2) (tanh) or dh [y[t] > 0]
    (relu) into dg (T, B, H); dh = da[t] W_hh; finally dh0 (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    k = tl.arange(0, BLOCK_H)[:, None]
    m = (b < B) & (j < H)
    wm = (k < H) & (j < H)
    w = _wt(w_ptr, 0, k, j, H, s_wr, s_wc, wm, COMPUTE)
    zero = tl.zeros((ROWS, BLOCK_H), COMPUTE)
    dh = tl.load(dhn_ptr + b * s_dhb + j * s_dhc, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t, _, _ = _back_step(s, T, REVERSE)
        dh += tl.load(dy_ptr + t * s_dyt + b * s_dyb + j * s_dyc, mask=m, other=0.0).to(COMPUTE)
        h = tl.load(y_ptr + t * s_yt + b * s_yb + j * s_yc, mask=m, other=0.0).to(COMPUTE)
        if RELU:
            da = tl.where(h > 0.0, dh, 0.0)
        else:
            da = dh * (1.0 - h * h)
        cast_store(dg_ptr + t * s_dgt + b * s_dgb + j, da, m)
        dh = _dot(da, w, w_ptr, 0, k, j, H, s_wr, s_wc, wm, zero, COMPUTE, RELOAD_W)
    cast_store(dh0_ptr + b * H + j, dh, m)


@triton.jit
def gru_layer_kernel(gi_ptr, w_ptr, b_ptr, h0_ptr, y_ptr, hn_ptr, gs_ptr, T, B, H,
                     s_gt, s_gb, s_gc, s_wr, s_wc, s_b, s_h0b, s_h0c, s_yt, s_yb,
                     REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                     RELOAD_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """For t = 0..T-1 (T-1..0 if REVERSE), with hg = h W_hh^T + b_hh (B, 3H): r = sigmoid(gi_r + hg_r),
    z = sigmoid(gi_z + hg_z), n = tanh(gi_n + r hg_n), h = n + z (h - n); gi (T, B, 3H); y[t] = h (T, B, H);
    gs[t] = (r, z, n, hg_n) (T, B, 4H) for the backward."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    k = tl.arange(0, BLOCK_H)[:, None]
    m = (b < B) & (j < H)
    wm = (k < H) & (j < H)
    wr = _wt(w_ptr, 0, j, k, H, s_wr, s_wc, wm, COMPUTE)
    wz = _wt(w_ptr, 1, j, k, H, s_wr, s_wc, wm, COMPUTE)
    wn = _wt(w_ptr, 2, j, k, H, s_wr, s_wc, wm, COMPUTE)
    bm = j < H
    zero = tl.zeros((ROWS, BLOCK_H), COMPUTE)
    br = zero + tl.load(b_ptr + j * s_b, mask=bm, other=0.0).to(COMPUTE)
    bz = zero + tl.load(b_ptr + (H + j) * s_b, mask=bm, other=0.0).to(COMPUTE)
    bn = zero + tl.load(b_ptr + (2 * H + j) * s_b, mask=bm, other=0.0).to(COMPUTE)
    h = tl.load(h0_ptr + b * s_h0b + j * s_h0c, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t = s
        if REVERSE:
            t = T - 1 - s
        gp = gi_ptr + t * s_gt + b * s_gb + j * s_gc
        r = sigmoid_h(tl.load(gp, mask=m, other=0.0).to(COMPUTE)
                      + _dot(h, wr, w_ptr, 0, j, k, H, s_wr, s_wc, wm, br, COMPUTE, RELOAD_W))
        z = sigmoid_h(tl.load(gp + H * s_gc, mask=m, other=0.0).to(COMPUTE)
                      + _dot(h, wz, w_ptr, 1, j, k, H, s_wr, s_wc, wm, bz, COMPUTE, RELOAD_W))
        hg = _dot(h, wn, w_ptr, 2, j, k, H, s_wr, s_wc, wm, bn, COMPUTE, RELOAD_W)
        n = tanh_epilogue_h(tl.load(gp + 2 * H * s_gc, mask=m, other=0.0).to(COMPUTE) + r * hg)
        h = n + z * (h - n)
        cast_store(y_ptr + t * s_yt + b * s_yb + j, h, m)
        q = (t * B + b) * 4 * H + j
        cast_store(gs_ptr + q, r, m)
        cast_store(gs_ptr + q + H, z, m)
        cast_store(gs_ptr + q + 2 * H, n, m)
        cast_store(gs_ptr + q + 3 * H, hg, m)
    cast_store(hn_ptr + b * H + j, h, m)


@triton.jit
def gru_layer_backward_kernel(dy_ptr, dhn_ptr, w_ptr, h0_ptr, y_ptr, gs_ptr, dgi_ptr, dgh_ptr, dh0_ptr, T, B, H,
                              s_dyt, s_dyb, s_dyc, s_dhb, s_dhc, s_wr, s_wc, s_h0b, s_h0c, s_yt, s_yb, s_yc,
                              s_dgt, s_dgb, REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                              RELOAD_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """Backward through time from dh = dh_n: dh += dy[t]; dn = dh (1 - z)(1 - n^2), dz = dh (h_{t-1} - n) z(1-z),
    dr = dn hg_n r(1-r); dgi[t] = (dr, dz, dn), dgh[t] = (dr, dz, dn r) (T, B, 3H);
    dh = dh z + dgh[t] W_hh; finally dh0 (B, H)."""
    b = (tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS))[:, None]
    j = tl.arange(0, BLOCK_H)[None, :]
    k = tl.arange(0, BLOCK_H)[:, None]
    m = (b < B) & (j < H)
    wm = (k < H) & (j < H)
    wr = _wt(w_ptr, 0, k, j, H, s_wr, s_wc, wm, COMPUTE)        # (dead code when RELOAD_W)
    wz = _wt(w_ptr, 1, k, j, H, s_wr, s_wc, wm, COMPUTE)
    wn = _wt(w_ptr, 2, k, j, H, s_wr, s_wc, wm, COMPUTE)
    dh = tl.load(dhn_ptr + b * s_dhb + j * s_dhc, mask=m, other=0.0).to(COMPUTE)
    h0 = tl.load(h0_ptr + b * s_h0b + j * s_h0c, mask=m, other=0.0).to(COMPUTE)
    for s in range(T):
        t, first, tp = _back_step(s, T, REVERSE)
        dh += tl.load(dy_ptr + t * s_dyt + b * s_dyb + j * s_dyc, mask=m, other=0.0).to(COMPUTE)
        q = gs_ptr + (t * B + b) * 4 * H + j
        r = tl.load(q, mask=m, other=0.0).to(COMPUTE)
        z = tl.load(q + H, mask=m, other=0.0).to(COMPUTE)
        n = tl.load(q + 2 * H, mask=m, other=0.0).to(COMPUTE)
        hg = tl.load(q + 3 * H, mask=m, other=0.0).to(COMPUTE)
        hp = tl.load(y_ptr + tp * s_yt + b * s_yb + j * s_yc, mask=m, other=0.0).to(COMPUTE)
        hp = tl.where(first, h0, hp)
        dn = dh * (1.0 - z) * (1.0 - n * n)
        dz = dh * (hp - n) * z * (1.0 - z)
        dr = dn * hg * r * (1.0 - r)
        dhn = dn * r
        off = t * s_dgt + b * s_dgb + j
        cast_store(dgi_ptr + off, dr, m)
        cast_store(dgi_ptr + off + H, dz, m)
        cast_store(dgi_ptr + off + 2 * H, dn, m)
        cast_store(dgh_ptr + off, dr, m)
        cast_store(dgh_ptr + off + H, dz, m)
        cast_store(dgh_ptr + off + 2 * H, dhn, m)
        dh = _dot(dr, wr, w_ptr, 0, k, j, H, s_wr, s_wc, wm, dh * z, COMPUTE, RELOAD_W)
        dh = _dot(dz, wz, w_ptr, 1, k, j, H, s_wr, s_wc, wm, dh, COMPUTE, RELOAD_W)
        dh = _dot(dhn, wn, w_ptr, 2, k, j, H, s_wr, s_wc, wm, dh, COMPUTE, RELOAD_W)
    cast_store(dh0_ptr + b * H + j, dh, m)


def _layer_tiles(B, H, dev):
    """(ROWS, BLOCK_H): the whole hidden size per program (the recurrence needs all of h), rows of the batch
    split across programs (>= 16 each: tl.dot's minimum on the GPU)."""
    bh = max(16, next_pow2(H))
    rows = max(16, min(next_pow2(B), (1024 if gpu_blocks(dev) else 65536) // bh))
    return rows, bh


# GPU compile options, the preferred first: the weight blocks reloaded every step are software-pipelined over
# num_stages buffers in shared memory (an LSTM backward at H = 64: 192,512 bytes at 3 stages, over sm_80's
# 166,912 per block; 98,304 at 2; 20,480 at 1).  A cuda launch takes the first that fits the device.
_LAYER_OPTIONS = tuple({"num_stages": s} for s in (3, 2, 1))


def _cached(key, make):
    site = _SITES.get(key)
    return site if site is not None else _SITES.add(key, make())


def _tb(t, bf):
    """Strides of ``t`` in (time, batch, column) order (``bf``: t is (B, T, C))."""
    st = t.stride()
    return (st[1], st[0], st[2]) if bf else tuple(st)


def _layer_launch(kernel, ts, strides, nt, B, H, reverse, dtype, dev, **constexprs):
    """Launch a whole-layer kernel (one program per ROWS rows of the batch) on the pointers of ``ts``."""
    key = (kernel.__name__, nt, B, H, strides, reverse, dtype, dev, T.FORCE_GPU_BLOCKS, tuple(constexprs.items()))

    def make():
        rows, bh = _layer_tiles(B, H, dev)
        return Launch(kernel, (cdiv(B, rows),), dev, [kptr(t) for t in ts] + [nt, B, H, *strides],
                      {**constexprs, "REVERSE": bool(reverse), "COMPUTE": compute_type(dtype),
                       "RELOAD_W": gpu_blocks(dev), "ROWS": rows, "BLOCK_H": bh}, _LAYER_OPTIONS)
    _cached(key, make)(*(t.data_ptr() for t in ts))


def lstm_layer(gi, w, b, h0, c0, y, hn, cn, cs, gs, reverse, bf):
    """Run one LSTM layer-direction: gi (T, B, 4H) (input projections incl. b_ih), w (4H, H), b (4H,) (b_hh;
    stride 0 for none), h0, c0 (B, H); writes contiguous y (T, B, H), hn, cn (B, H), cs (T, B, H),
    gs (T, B, 4H).  ``bf`` (batch first): gi and y are (B, T, *)."""
    nt, B, H = cs.shape
    if nt * B * H:
        strides = (*_tb(gi, bf), *w.stride(), b.stride(0), *h0.stride(), *c0.stride(), *_tb(y, bf)[:2])
        dev = y._storage.launch_device
        _layer_launch(lstm_layer_kernel, (gi, w, b, h0, c0, y, hn, cn, cs, gs), strides, nt, B, H, reverse,
                      y.dtype, dev, GATE_TILE=not gpu_blocks(dev))


def lstm_layer_backward(dy, dhn, dcn, w, c0, cs, gs, dg, dh0, dc0, reverse, bf):
    """Contiguous dgates dg (T, B, 4H), dh0, dc0 (B, H) from the gradients dy (T, B, H), dh_n, dc_n (B, H) and
    the forward's w, c0, cs, gs (``bf``: dy and dg are (B, T, *))."""
    nt, B, H = cs.shape
    if nt * B * H:
        strides = (*_tb(dy, bf), *dhn.stride(), *dcn.stride(), *w.stride(), *c0.stride(), *_tb(dg, bf)[:2])
        dev = dg._storage.launch_device
        _layer_launch(lstm_layer_backward_kernel, (dy, dhn, dcn, w, c0, cs, gs, dg, dh0, dc0), strides, nt, B, H,
                      reverse, dy.dtype, dev, GATE_TILE=not gpu_blocks(dev))


def rnn_layer(gi, w, b, h0, y, hn, relu, reverse, bf):
    """One Elman RNN layer-direction (tanh, or relu): gi (T, B, H), w (H, H), b (H,) (stride 0 for none),
    h0 (B, H) -> contiguous y (T, B, H) and hn (B, H) (``bf``: gi and y are (B, T, *))."""
    nt, B, H = gi.shape[1 if bf else 0], h0.shape[0], h0.shape[1]
    if nt * B * H:
        strides = (*_tb(gi, bf), *w.stride(), b.stride(0), *h0.stride(), *_tb(y, bf)[:2])
        _layer_launch(rnn_layer_kernel, (gi, w, b, h0, y, hn), strides, nt, B, H, reverse, y.dtype,
                      y._storage.launch_device, RELU=bool(relu))


def rnn_layer_backward(dy, dhn, w, y, dg, dh0, relu, reverse, bf):
    """Contiguous dg (T, B, H) (gradient of the pre-activations) and dh0 (B, H) from dy (T, B, H), dh_n and the
    forward's w and y (``bf``: dy, y and dg are (B, T, *))."""
    nt, B, H = y.shape[1 if bf else 0], dh0.shape[0], dh0.shape[1]
    if nt * B * H:
        strides = (*_tb(dy, bf), *dhn.stride(), *w.stride(), *_tb(y, bf), *_tb(dg, bf)[:2])
        _layer_launch(rnn_layer_backward_kernel, (dy, dhn, w, y, dg, dh0), strides, nt, B, H, reverse, dg.dtype,
                      dg._storage.launch_device, RELU=bool(relu))


def gru_layer(gi, w, b, h0, y, hn, gs, reverse, bf):
    """One GRU layer-direction: gi (T, B, 3H), w (3H, H), b (3H,) (stride 0 for none), h0 (B, H) -> contiguous
    y (T, B, H), hn (B, H) and gs (T, B, 4H) (r, z, n, hg_n) for the backward (``bf``: gi and y are (B, T, *))."""
    nt, B, H = gs.shape[0], h0.shape[0], h0.shape[1]
    if nt * B * H:
        strides = (*_tb(gi, bf), *w.stride(), b.stride(0), *h0.stride(), *_tb(y, bf)[:2])
        _layer_launch(gru_layer_kernel, (gi, w, b, h0, y, hn, gs), strides, nt, B, H, reverse, y.dtype,
                      y._storage.launch_device)


def gru_layer_backward(dy, dhn, w, h0, y, gs, dgi, dgh, dh0, reverse, bf):
    """Contiguous dgi, dgh (T, B, 3H) (gradients of the input and hidden gate pre-activations) and dh0 (B, H)
    from dy (T, B, H), dh_n and the forward's w, h0, y, gs (``bf``: dy, y, dgi and dgh are (B, T, *))."""
    nt, B, H = gs.shape[0], h0.shape[0], h0.shape[1]
    if nt * B * H:
        strides = (*_tb(dy, bf), *dhn.stride(), *w.stride(), *h0.stride(), *_tb(y, bf), *_tb(dgi, bf)[:2])
        _layer_launch(gru_layer_backward_kernel, (dy, dhn, w, h0, y, gs, dgi, dgh, dh0), strides, nt, B, H,
                      reverse, dgi.dtype, dgi._storage.launch_device)
