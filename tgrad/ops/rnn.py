"""Recurrent cells: the fused pointwise part of one LSTM / GRU step (PyTorch's ``_thnn_fused_*_cell``).

``lstm_cell(input_gates, hidden_gates, cx) -> (hy, cy)`` and ``gru_cell(input_gates, hidden_gates, hx)
-> hy`` take the two gate pre-activations (B, G*H) the step's linear ops made (gate order LSTM i, f,
g, o; GRU r, z, n); one Triton kernel each way (tgrad/kernels/rnn.py).  The backward ops are table
entries too; their backward (double backward) is written in closed form with tgrad ops.

``lstm_layer``, ``gru_layer`` and ``rnn_layer`` run a whole layer-direction (all time steps, h W_hh^T on the
fly) in one launch, their backward through time in one more; under create_graph the backward is recomputed
with the per-step ops above (differentiable again).
"""
from .._state import state as _grad_state
from ..kernels import elementwise as KE
from ..kernels import rnn as KR
from ..tensor import empty
from . import Op, call as _c, host_full


def _check(name, gates, G, igates, hgates, state, state_name):
    for t in (igates, hgates, state):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"{name}: expected a floating point tensor, got {t.dtype}")
        if t.dtype is not igates.dtype:
            raise RuntimeError(f"{name}: expected all tensors to have dtype {igates.dtype}, got {t.dtype}")
    if state.dim() != 2 or igates.dim() != 2:
        raise RuntimeError(f"{name}: expected 2-D {gates} and {state_name}, got {igates.dim()}-D and "
                           f"{state.dim()}-D")
    B, H = state.shape
    for t in (igates, hgates):
        if tuple(t.shape) != (B, G * H):
            raise RuntimeError(f"{name}: expected {gates} of size {[B, G * H]} for {state_name} of size "
                               f"{[B, H]}, got {list(t.shape)}")
    return B, H


def _zero_or(g, like):
    """``g``, or a broadcast zero (no launch) for an output that got no gradient."""
    return g if g is not None else host_full(tuple(like.shape), 0.0, like.dtype, like.device, broadcast=True)


# ------------------------------------------------------------------ LSTM
def lstm_cell_forward(input_gates, hidden_gates, cx):
    B, H = _check("lstm_cell", "gates", 4, input_gates, hidden_gates, cx, "cx")
    hy = empty((B, H), cx.dtype, cx.device)
    cy = empty((B, H), cx.dtype, cx.device)
    return KR.lstm_cell(input_gates, hidden_gates, cx, hy, cy)


def lstm_cell_backward(ctx, grad_hy, grad_cy):
    cx = ctx.saved["cx"]
    dg, dcx = _c("lstm_cell_backward", _zero_or(grad_hy, cx), _zero_or(grad_cy, cx), ctx.saved["input_gates"],
                 ctx.saved["hidden_gates"], cx)
    need = ctx.needs_input_grad
    return dg if need[0] else None, dg if need[1] else None, dcx if need[2] else None


LSTM_CELL = Op("lstm_cell", lstm_cell_forward, lstm_cell_backward, "ThnnFusedLstmCellBackward0",
               inputs=("input_gates", "hidden_gates", "cx"), save=("input_gates", "hidden_gates", "cx"), outputs=2)


def lstm_cell_backward_forward(grad_hy, grad_cy, input_gates, hidden_gates, cx):
    B, H = _check("lstm_cell_backward", "gates", 4, input_gates, hidden_gates, cx, "cx")
    for g in (grad_hy, grad_cy):
        if tuple(g.shape) != (B, H):
            raise RuntimeError(f"lstm_cell_backward: expected gradients of size {[B, H]}, got {list(g.shape)}")
    dg = empty((B, 4 * H), cx.dtype, cx.device)
    dcx = empty((B, H), cx.dtype, cx.device)
    return KR.lstm_cell_backward(grad_hy, grad_cy, input_gates, hidden_gates, cx, dg, dcx)


def lstm_cell_double_backward(ctx, gg_gates, gg_cx):
    """L = <gg_gates, dgates> + <gg_cx, dcx>; with D = dcy + dhy o (1 - tc^2), tc = tanh(cy),
    P = gi g si + gf cx sf + gg i (1 - g^2) + gg_cx f (s* = sigmoid derivatives) and
    Q = dL/dcy: dL/ddcy = P, dL/ddhy = P o (1 - tc^2) + go tc so, and dL/d(a, cx) by the chain rule."""
    dh, dc, ig, hg, c = (ctx.saved[k] for k in ("grad_hy", "grad_cy", "input_gates", "hidden_gates", "cx"))
    i, f, g, o = (ig + hg).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    gi, gf, gg, go = _zero_or(gg_gates, ig).chunk(4, 1)
    gc = _zero_or(gg_cx, c)
    si, sf, so, tg = i * (1 - i), f * (1 - f), o * (1 - o), 1 - g * g
    tc = (f * c + i * g).tanh()
    tt = 1 - tc * tc
    D_ = dc + dh * o * tt
    P = gi * g * si + gf * c * sf + gg * i * tg + gc * f
    Q = dh * o * tc * tt * P * (-2) + go * dh * tt * so
    need = ctx.needs_input_grad
    d_dh = P * o * tt + go * tc * so if need[0] else None
    d_dc = P if need[1] else None
    da = None
    if need[2] or need[3]:
        da = _c("cat", Q * g * si + D_ * (gi * g * si * (1 - 2 * i) + gg * tg * si),
                Q * c * sf + D_ * (gf * c * sf * (1 - 2 * f) + gc * sf),
                Q * i * tg + D_ * (gi * si * tg - gg * i * g * tg * 2),
                P * dh * so * tt + go * dh * tc * so * (1 - 2 * o), dim=1)
    d_c = Q * f + D_ * gf * sf if need[4] else None
    return d_dh, d_dc, da if need[2] else None, da if need[3] else None, d_c


LSTM_CELL_BACKWARD = Op(
    "lstm_cell_backward", lstm_cell_backward_forward, lstm_cell_double_backward,
    "ThnnFusedLstmCellBackwardImplBackward0", inputs=("grad_hy", "grad_cy", "input_gates", "hidden_gates", "cx"),
    save=("grad_hy", "grad_cy", "input_gates", "hidden_gates", "cx"), outputs=2)


# ------------------------------------------------------------------ GRU
def gru_cell_forward(input_gates, hidden_gates, hx):
    B, H = _check("gru_cell", "gates", 3, input_gates, hidden_gates, hx, "hx")
    return KR.gru_cell(input_gates, hidden_gates, hx, empty((B, H), hx.dtype, hx.device))


def gru_cell_backward(ctx, grad_hy):
    dig, dhg, dhx = _c("gru_cell_backward", grad_hy, ctx.saved["input_gates"], ctx.saved["hidden_gates"],
                       ctx.saved["hx"])
    need = ctx.needs_input_grad
    return dig if need[0] else None, dhg if need[1] else None, dhx if need[2] else None


GRU_CELL = Op("gru_cell", gru_cell_forward, gru_cell_backward, "ThnnFusedGruCellBackward0",
              inputs=("input_gates", "hidden_gates", "hx"), save=("input_gates", "hidden_gates", "hx"))


def gru_cell_backward_forward(grad_hy, input_gates, hidden_gates, hx):
    B, H = _check("gru_cell_backward", "gates", 3, input_gates, hidden_gates, hx, "hx")
    if tuple(grad_hy.shape) != (B, H):
        raise RuntimeError(f"gru_cell_backward: expected a gradient of size {[B, H]}, got {list(grad_hy.shape)}")
    dig = empty((B, 3 * H), hx.dtype, hx.device)
    dhg = empty((B, 3 * H), hx.dtype, hx.device)
    dhx = empty((B, H), hx.dtype, hx.device)
    return KR.gru_cell_backward(grad_hy, input_gates, hidden_gates, hx, dig, dhg, dhx)


def gru_cell_double_backward(ctx, g_ig, g_hg, g_hx):
    """L = <g_ig, dig> + <g_hg, dhg> + <g_hx, dhx>; with Ar, Az the summed r, z rows of g_ig + g_hg,
    M = gi_n + gh_n r + Ar hn sr and E = dL/da_n, the gradients follow by the chain rule."""
    dy, ig, hg, h = (ctx.saved[k] for k in ("grad_hy", "input_gates", "hidden_gates", "hx"))
    ir, iz, in_ = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    gir, giz, gin = _zero_or(g_ig, ig).chunk(3, 1)
    ghr, ghz, ghn = _zero_or(g_hg, hg).chunk(3, 1)
    gh = _zero_or(g_hx, h)
    sr, sz, tn = r * (1 - r), z * (1 - z), 1 - n * n
    Ar, Az = gir + ghr, giz + ghz
    M = gin + ghn * r + Ar * hn * sr
    Dn = dy * (1 - z) * tn
    E = tn * (n * dy * (1 - z) * M * (-2) - Az * dy * sz)
    need = ctx.needs_input_grad
    d_dy = (1 - z) * tn * M + Az * (h - n) * sz + gh * z if need[0] else None
    d_ig = d_hg = None
    if need[1] or need[2]:
        daz = sz * (-dy * tn * M + Az * dy * (h - n) * (1 - 2 * z) + gh * dy)
        dar = sr * (E * hn + Dn * (ghn + Ar * hn * (1 - 2 * r)))
        d_ig = _c("cat", dar, daz, E, dim=1) if need[1] else None
        d_hg = _c("cat", dar, daz, E * r + Dn * Ar * sr, dim=1) if need[2] else None
    d_h = Az * dy * sz if need[3] else None
    return d_dy, d_ig, d_hg, d_h


GRU_CELL_BACKWARD = Op("gru_cell_backward", gru_cell_backward_forward, gru_cell_double_backward,
                       "ThnnFusedGruCellBackwardBackward0", inputs=("grad_hy", "input_gates", "hidden_gates", "hx"),
                       save=("grad_hy", "input_gates", "hidden_gates", "hx"), outputs=3)


# ------------------------------------------------------------------ a whole LSTM layer-direction
def _layer_check(name, G, input_gates, weight_hh, bias_hh, hx, cx, batch_first):
    """(T, B, H) of a whole-layer op with G gates; PyTorch-style errors on dtypes and sizes."""
    ts = [t for t in (input_gates, weight_hh, bias_hh, hx, cx) if t is not None]
    for t in ts:
        if not t.dtype.is_floating_point or t.dtype is not input_gates.dtype:
            raise RuntimeError(f"{name}: expected floating point tensors of one dtype, got "
                               f"{[str(t.dtype) for t in ts]}")
    if input_gates.dim() != 3 or hx.dim() != 2 or (cx is not None and cx.dim() != 2) or weight_hh.dim() != 2:
        raise RuntimeError(f"{name}: expected 3-D input_gates, 2-D weight_hh, hx" + (" and cx" if cx is not None
                                                                                       else ""))
    T, B = (input_gates.shape[1], input_gates.shape[0]) if batch_first else input_gates.shape[:2]
    H = hx.shape[1]
    if (input_gates.shape[2] != G * H or tuple(weight_hh.shape) != (G * H, H) or tuple(hx.shape) != (B, H)
            or (cx is not None and tuple(cx.shape) != (B, H))
            or (bias_hh is not None and tuple(bias_hh.shape) != (G * H,))):
        raise RuntimeError(f"{name}: sizes do not match: input_gates {list(input_gates.shape)}, weight_hh "
                           f"{list(weight_hh.shape)}, hx {list(hx.shape)}"
                           + (f", cx {list(cx.shape)}" if cx is not None else ""))
    return T, B, H


def _bias_or_zero(bias_hh, G, H, dt, dev):
    return bias_hh if bias_hh is not None else host_full((G * H,), 0.0, dt, dev, broadcast=True)


def lstm_layer_forward(input_gates, weight_hh, bias_hh, hx, cx, *, batch_first=False, reverse=False):
    """One LSTM layer-direction over all time steps in one launch: input_gates (T, B, 4H) (x W_ih^T + b_ih;
    (B, T, 4H) if batch_first), hx, cx (B, H) -> (y (T, B, H) or (B, T, H), h_n, c_n, and for the backward
    the cell states (T, B, H) and activated gates (T, B, 4H))."""
    T, B, H = _layer_check("lstm_layer", 4, input_gates, weight_hh, bias_hh, hx, cx, batch_first)
    dt, dev = cx.dtype, cx.device
    y = empty((B, T, H) if batch_first else (T, B, H), dt, dev)
    hn, cn = empty((B, H), dt, dev), empty((B, H), dt, dev)
    cs, gs = empty((T, B, H), dt, dev), empty((T, B, 4 * H), dt, dev)
    if T == 0:          # no step: the final state is the initial one
        return y, KE.copy(hx, hn), KE.copy(cx, cn), cs, gs
    KR.lstm_layer(input_gates, weight_hh, _bias_or_zero(bias_hh, 4, H, dt, dev), hx, cx, y, hn, cn, cs, gs, reverse,
                  batch_first)
    return y, hn, cn, cs, gs


def _prev_states(y, hx, tdim, reverse):
    """h_{t-1} for every step, laid out as y: h0 then y without its last step (reverse: y[1:] then h0)."""
    T = y.shape[tdim]
    h0 = hx.unsqueeze(tdim)
    if reverse:
        return _c("cat", y.narrow(tdim, 1, T - 1), h0, dim=tdim)
    return _c("cat", h0, y.narrow(tdim, 0, T - 1), dim=tdim)


def lstm_layer_backward(ctx, grad_y, grad_hn, grad_cn, _gc=None, _gg=None):
    s, a = ctx.saved, ctx.attrs
    bf, rev = a.get("batch_first", False), a.get("reverse", False)
    if _grad_state.recording and s["result3"].shape[0]:   # create_graph: the same gradients from per-step ops
        return _layer_backward_by_steps(ctx, grad_y, grad_hn, grad_cn, bf, rev)
    w, hx = s["weight_hh"], s["hx"]
    dg, dh0, dc0 = _c("lstm_layer_backward", grad_y, grad_hn, grad_cn, w, s["cx"], s["result3"], s["result4"],
                      batch_first=bf, reverse=rev)
    need = ctx.needs_input_grad
    dw, db = _hidden_weight_grads(need, dg, s["result"], hx, w, bf, rev)
    return dg if need[0] else None, dw, db, dh0 if need[3] else None, dc0 if need[4] else None


LSTM_LAYER = Op("lstm_layer", lstm_layer_forward, lstm_layer_backward, "LstmLayerBackward0",
                inputs=("input_gates", "weight_hh", "bias_hh", "hx", "cx"),
                save=("input_gates", "weight_hh", "bias_hh", "hx", "cx", "result", "result3", "result4"), outputs=5,
                nondiff_outputs=(3, 4))


def _hidden_weight_grads(need, dgh, y, hx, w, bf, rev):
    """(d W_hh, d b_hh) (None where not needed) from the gradients of the hidden gates dgh (T, B, G*H) (or
    (B, T, G*H)) and the layer's outputs y: dW = sum_t dgh[t]^T h_{t-1}, db = sum_t dgh[t]."""
    GH, H = w.shape
    dw = db = None
    if y.shape[1 if bf else 0] == 0:      # no step: no gradient for the weights
        dw = host_full(tuple(w.shape), 0.0, w.dtype, w.device) if need[1] else None
        db = host_full((GH,), 0.0, w.dtype, w.device) if need[2] else None
        return dw, db
    if need[1]:
        hp = _prev_states(y, hx, 1 if bf else 0, rev)
        dw = _c("mm", dgh.reshape(-1, GH).t(), hp.reshape(-1, H))
    if need[2]:
        db = _c("sum", dgh, dim=(0, 1))
    return dw, db


def _layer_backward_by_steps(ctx, grad_y, grad_hn, grad_cn, bf, rev):
    """Backward through time with lstm_cell / lstm_cell_backward / mm ops (recomputing the forward)."""
    s = ctx.saved
    gi, w, bh, h, c = (s.get(k) for k in ("input_gates", "weight_hh", "bias_hh", "hx", "cx"))
    tdim = 1 if bf else 0
    T = gi.shape[tdim]
    order = list(reversed(range(T))) if rev else list(range(T))
    steps = []
    for t in order:
        ig = gi.select(tdim, t)
        hg = _c("linear", h, w, bh)
        steps.append((t, ig, hg, h, c))
        h, c = _c("lstm_cell", ig, hg, c)
    dh, dc, dgs, dw, db = grad_hn, grad_cn, [None] * T, None, None
    for t, ig, hg, hp, cp in reversed(steps):
        dh = dh + grad_y.select(tdim, t)
        dg, dc = _c("lstm_cell_backward", dh, dc, ig, hg, cp)
        dgs[t] = dg
        dw = _c("mm", dg.t(), hp) if dw is None else dw + _c("mm", dg.t(), hp)
        db = dg.sum(0) if db is None else db + dg.sum(0)
        dh = _c("mm", dg, w)
    need = ctx.needs_input_grad
    return (_c("stack", *dgs, dim=tdim) if need[0] else None, dw if need[1] else None,
            db if need[2] else None, dh if need[3] else None, dc if need[4] else None)


def lstm_layer_backward_forward(grad_y, grad_hn, grad_cn, weight_hh, cx, cell_states, gates, *, batch_first=False,
                                reverse=False):
    """(d input_gates, d hx, d cx) of lstm_layer: one launch running backward through time."""
    T, B, H = cell_states.shape
    dt, dev = cx.dtype, cx.device
    dg = empty((B, T, 4 * H) if batch_first else (T, B, 4 * H), dt, dev)
    dh0, dc0 = empty((B, H), dt, dev), empty((B, H), dt, dev)
    if T == 0:
        return dg, KE.copy(grad_hn, dh0), KE.copy(grad_cn, dc0)
    KR.lstm_layer_backward(grad_y, grad_hn, grad_cn, weight_hh, cx, cell_states, gates, dg, dh0, dc0, reverse,
                           batch_first)
    return dg, dh0, dc0


LSTM_LAYER_BACKWARD = Op("lstm_layer_backward", lstm_layer_backward_forward, None, None,
                         inputs=("grad_y", "grad_hn", "grad_cn", "weight_hh", "cx", "cell_states", "gates"), outputs=3)


# ------------------------------------------------------------------ whole GRU / Elman RNN layer-directions
def gru_layer_forward(input_gates, weight_hh, bias_hh, hx, *, batch_first=False, reverse=False):
    """One GRU layer-direction over all time steps in one launch: input_gates (T, B, 3H) (x W_ih^T + b_ih, gates
    r, z, n; (B, T, 3H) if batch_first), hx (B, H) -> (y (T, B, H) or (B, T, H), h_n, and for the backward the
    gates (T, B, 4H): r, z, n and the hidden n pre-activation h W_hn^T + b_hn)."""
    T, B, H = _layer_check("gru_layer", 3, input_gates, weight_hh, bias_hh, hx, None, batch_first)
    dt, dev = hx.dtype, hx.device
    y = empty((B, T, H) if batch_first else (T, B, H), dt, dev)
    hn, gs = empty((B, H), dt, dev), empty((T, B, 4 * H), dt, dev)
    if T == 0:
        return y, KE.copy(hx, hn), gs
    KR.gru_layer(input_gates, weight_hh, _bias_or_zero(bias_hh, 3, H, dt, dev), hx, y, hn, gs, reverse, batch_first)
    return y, hn, gs


def gru_layer_backward(ctx, grad_y, grad_hn, _gg=None):
    s, a = ctx.saved, ctx.attrs
    bf, rev = a.get("batch_first", False), a.get("reverse", False)
    w, hx, y = s["weight_hh"], s["hx"], s["result"]
    if _grad_state.recording and s["result2"].shape[0]:   # create_graph: the same gradients from per-step ops
        return _single_backward_by_steps(ctx, grad_y, grad_hn, bf, rev, "GRU")
    dgi, dgh, dh0 = _c("gru_layer_backward", grad_y, grad_hn, w, hx, y, s["result2"], batch_first=bf, reverse=rev)
    need = ctx.needs_input_grad
    dw, db = _hidden_weight_grads(need, dgh, y, hx, w, bf, rev)
    return dgi if need[0] else None, dw, db, dh0 if need[3] else None


GRU_LAYER = Op("gru_layer", gru_layer_forward, gru_layer_backward, "GruLayerBackward0",
               inputs=("input_gates", "weight_hh", "bias_hh", "hx"),
               save=("input_gates", "weight_hh", "bias_hh", "hx", "result", "result2"), outputs=3, nondiff_outputs=(2,))


def gru_layer_backward_forward(grad_y, grad_hn, weight_hh, hx, y, gates, *, batch_first=False, reverse=False):
    """(d input_gates, d hidden_gates, d hx) of gru_layer: one launch running backward through time."""
    T, B, H4 = gates.shape
    H = H4 // 4
    dt, dev = hx.dtype, hx.device
    shape = (B, T, 3 * H) if batch_first else (T, B, 3 * H)
    dgi, dgh, dh0 = empty(shape, dt, dev), empty(shape, dt, dev), empty((B, H), dt, dev)
    if T == 0:
        return dgi, dgh, KE.copy(grad_hn, dh0)
    KR.gru_layer_backward(grad_y, grad_hn, weight_hh, hx, y, gates, dgi, dgh, dh0, reverse, batch_first)
    return dgi, dgh, dh0


GRU_LAYER_BACKWARD = Op("gru_layer_backward", gru_layer_backward_forward, None, None,
                        inputs=("grad_y", "grad_hn", "weight_hh", "hx", "y", "gates"), outputs=3)


def _relu(nonlinearity):
    if nonlinearity not in ("tanh", "relu"):
        raise RuntimeError(f"Unknown nonlinearity: {nonlinearity}")
    return nonlinearity == "relu"


def rnn_layer_forward(input_gates, weight_hh, bias_hh, hx, *, nonlinearity="tanh", batch_first=False,
                      reverse=False):
    """One Elman RNN layer-direction in one launch: h_t = act(input_gates[t] + h_{t-1} W_hh^T + b_hh), act tanh
    or relu; input_gates (T, B, H) (x W_ih^T + b_ih; (B, T, H) if batch_first), hx (B, H) -> (y, h_n)."""
    relu = _relu(nonlinearity)
    T, B, H = _layer_check("rnn_layer", 1, input_gates, weight_hh, bias_hh, hx, None, batch_first)
    dt, dev = hx.dtype, hx.device
    y, hn = empty((B, T, H) if batch_first else (T, B, H), dt, dev), empty((B, H), dt, dev)
    if T == 0:
        return y, KE.copy(hx, hn)
    KR.rnn_layer(input_gates, weight_hh, _bias_or_zero(bias_hh, 1, H, dt, dev), hx, y, hn, relu, reverse,
                 batch_first)
    return y, hn


def rnn_layer_backward(ctx, grad_y, grad_hn):
    s, a = ctx.saved, ctx.attrs
    bf, rev = a.get("batch_first", False), a.get("reverse", False)
    nl = a.get("nonlinearity", "tanh")
    w, hx, y = s["weight_hh"], s["hx"], s["result"]
    if _grad_state.recording and y.shape[1 if bf else 0]:
        return _single_backward_by_steps(ctx, grad_y, grad_hn, bf, rev, nl)
    dg, dh0 = _c("rnn_layer_backward", grad_y, grad_hn, w, y, nonlinearity=nl, batch_first=bf, reverse=rev)
    need = ctx.needs_input_grad
    dw, db = _hidden_weight_grads(need, dg, y, hx, w, bf, rev)
    return dg if need[0] else None, dw, db, dh0 if need[3] else None


RNN_LAYER = Op("rnn_layer", rnn_layer_forward, rnn_layer_backward, "RnnLayerBackward0",
               inputs=("input_gates", "weight_hh", "bias_hh", "hx"), save=("input_gates", "weight_hh", "bias_hh", "hx",
                                                                           "result"), outputs=2)


def rnn_layer_backward_forward(grad_y, grad_hn, weight_hh, y, *, nonlinearity="tanh", batch_first=False,
                               reverse=False):
    """(d input_gates, d hx) of rnn_layer: one launch running backward through time."""
    relu = _relu(nonlinearity)
    B, H = grad_hn.shape
    dt, dev = y.dtype, y.device
    dg, dh0 = empty(tuple(y.shape), dt, dev), empty((B, H), dt, dev)
    if y.shape[1 if batch_first else 0] == 0:
        return dg, KE.copy(grad_hn, dh0)
    KR.rnn_layer_backward(grad_y, grad_hn, weight_hh, y, dg, dh0, relu, reverse, batch_first)
    return dg, dh0


RNN_LAYER_BACKWARD = Op("rnn_layer_backward", rnn_layer_backward_forward, None, None,
                        inputs=("grad_y", "grad_hn", "weight_hh", "y"), outputs=2)


def _single_backward_by_steps(ctx, grad_y, grad_hn, bf, rev, mode):
    """Backward through time of gru_layer / rnn_layer with per-step ops (recomputing the forward), so the
    gradients are differentiable (create_graph)."""
    s = ctx.saved
    gi, w, bh, h = (s.get(k) for k in ("input_gates", "weight_hh", "bias_hh", "hx"))
    tdim = 1 if bf else 0
    T = gi.shape[tdim]
    steps = []
    for t in (reversed(range(T)) if rev else range(T)):
        ig = gi.select(tdim, t)
        hg = _c("linear", h, w, bh)
        steps.append((t, ig, hg, h))
        if mode == "GRU":
            h = _c("gru_cell", ig, hg, h)
        else:
            h = (ig + hg).tanh() if mode == "tanh" else (ig + hg).relu()
        steps[-1] += (h,)
    dh, dgs, dw, db = grad_hn, [None] * T, None, None
    for t, ig, hg, hp, hy in reversed(steps):
        dh = dh + grad_y.select(tdim, t)
        if mode == "GRU":
            dig, dhg, dhx = _c("gru_cell_backward", dh, ig, hg, hp)
        else:
            dig = dhg = dh * (1 - hy * hy) if mode == "tanh" else dh * (hy > 0)
            dhx = None
        dgs[t] = dig
        dw = _c("mm", dhg.t(), hp) if dw is None else dw + _c("mm", dhg.t(), hp)
        db = dhg.sum(0) if db is None else db + dhg.sum(0)
        dh = _c("mm", dhg, w) if dhx is None else dhx + _c("mm", dhg, w)
    need = ctx.needs_input_grad
    return (_c("stack", *dgs, dim=tdim) if need[0] else None, dw if need[1] else None,
            db if need[2] else None, dh if need[3] else None)


ENTRIES = [LSTM_LAYER, LSTM_LAYER_BACKWARD, GRU_LAYER, GRU_LAYER_BACKWARD, RNN_LAYER, RNN_LAYER_BACKWARD, LSTM_CELL,
           LSTM_CELL_BACKWARD, GRU_CELL, GRU_CELL_BACKWARD]
