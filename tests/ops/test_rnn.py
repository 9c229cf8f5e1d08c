"""Recurrent layers and cells: PyTorch 2.13's numbers, numpy recurrences, gradcheck, names and errors.

The lstm_cell / gru_cell ops themselves are checked by their OpInfos (tgrad/testing/opinfos/rnn.py).
"""
import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.kernels.runtime import COUNTER


def det(shape, k):
    """Deterministic values (the same formula produced the PyTorch references below)."""
    n = int(np.prod(shape))
    return (0.3 * np.sin(0.7 * np.arange(n) + k)).reshape(shape)


def chk(g):
    """A checksum that sees every element."""
    g = np.asarray(g, np.float64).ravel()
    return float((g * np.cos(np.arange(g.size))).sum())


# Computed with PyTorch 2.13 (CPU, float32): parameters det(p.shape, k) in named_parameters order,
# x = 3 det(shape, 11), loss = sum(y * det(y.shape, 5)) + sum over h_n (and c_n) of sum(h * det(h.shape, 7)).
TORCH_REF = [
    ("LSTM", dict(input_size=3, hidden_size=4, num_layers=2, batch_first=True, bidirectional=True), (2, 5, 3),
     {'loss': 0.023157315328717232, 'y': 0.44359494619791184, 'h': [-0.05216162706318733, -0.3969255961557682],
      'gx': -0.03927753757033989},
     {'weight_ih_l0': 0.1120645378789934, 'weight_hh_l0': 0.021254808311119637, 'bias_ih_l0': 0.12195984924108771,
      'bias_hh_l0': 0.12195984924108771, 'weight_ih_l0_reverse': 0.0474766843615949,
      'weight_hh_l0_reverse': -0.0679406082319382, 'bias_ih_l0_reverse': 0.049835761814821786,
      'bias_hh_l0_reverse': 0.049835761814821786, 'weight_ih_l1': 0.05805559896381799,
      'weight_hh_l1': 0.0044270081523312115, 'bias_ih_l1': -0.1182171963017575, 'bias_hh_l1': -0.1182171963017575,
      'weight_ih_l1_reverse': -0.024000697180256655, 'weight_hh_l1_reverse': -0.000656343951306421,
      'bias_ih_l1_reverse': -0.15737370256649214, 'bias_hh_l1_reverse': -0.15737370256649214}),
    ("LSTM", dict(input_size=3, hidden_size=5, proj_size=2), (4, 2, 3),
     {'loss': -0.07164514064788818, 'y': 0.048285249569112676, 'h': [0.10122582691027834, -0.10527351725623943],
      'gx': 0.072102772602602},
     {'weight_ih_l0': -0.17965357841366653, 'weight_hh_l0': -0.006920852783174218, 'bias_ih_l0': 0.15862137733057974,
      'bias_hh_l0': 0.15862139078851242, 'weight_hr_l0': -0.07186401941659161}),
    ("GRU", dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True), (5, 2, 3),
     {'loss': -0.15273168683052063, 'y': 0.4556488176063995, 'h': [-0.7767610473114444], 'gx': 0.07014902227528005},
     {'weight_ih_l0': 0.027644778049362214, 'weight_hh_l0': 0.023774021650180274, 'bias_ih_l0': -0.2292416761344466,
      'bias_hh_l0': -0.12887560687966437, 'weight_ih_l0_reverse': -0.0908638268818334,
      'weight_hh_l0_reverse': 0.06539680616712179, 'bias_ih_l0_reverse': -0.024975452244676698,
      'bias_hh_l0_reverse': 0.03414722103269583, 'weight_ih_l1': -0.08615935814058051,
      'weight_hh_l1': 0.04187933690721894, 'bias_ih_l1': -0.5940635397439799, 'bias_hh_l1': -0.2720305731078168,
      'weight_ih_l1_reverse': 0.050302986550259166, 'weight_hh_l1_reverse': -0.03525356288553633,
      'bias_ih_l1_reverse': -0.5028036922297854, 'bias_hh_l1_reverse': -0.21238210509644215}),
    ("RNN", dict(input_size=3, hidden_size=4, nonlinearity="relu", batch_first=True), (2, 5, 3),
     {'loss': 0.08443879336118698, 'y': -1.3843048852713502, 'h': [0.7746800903710456], 'gx': 0.24242154787968714},
     {'weight_ih_l0': 0.6312851692389432, 'weight_hh_l0': -0.04963095650375383, 'bias_ih_l0': 0.054992480015911296,
      'bias_hh_l0': 0.054992509818233684}),
]


@pytest.mark.parametrize("cls,kw,xs,ref,grads", TORCH_REF, ids=lambda v: v if isinstance(v, str) else None)
def test_matches_pytorch(device, cls, kw, xs, ref, grads):
    m = getattr(nn, cls)(**kw).to(device)
    assert [n for n, _ in m.named_parameters()] == list(grads)
    with tgrad.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(tgrad.tensor(det(p.shape, k), dtype=tgrad.float32))
    x = tgrad.tensor(det(xs, 11) * 3, dtype=tgrad.float32, device=device, requires_grad=True)
    y, h = m(x)
    hs = h if isinstance(h, tuple) else (h,)
    loss = (y * tgrad.tensor(det(y.shape, 5), dtype=tgrad.float32, device=device)).sum()
    for t in hs:
        loss = loss + (t * tgrad.tensor(det(t.shape, 7), dtype=tgrad.float32, device=device)).sum()
    loss.backward()
    np.testing.assert_allclose(loss.item(), ref["loss"], atol=1e-6)
    np.testing.assert_allclose(chk(y.detach().cpu().numpy()), ref["y"], atol=1e-5)
    np.testing.assert_allclose([chk(t.detach().cpu().numpy()) for t in hs], ref["h"], atol=1e-5)
    np.testing.assert_allclose(chk(x.grad.cpu().numpy()), ref["gx"], atol=1e-6)
    got = {n: chk(p.grad.cpu().numpy()) for n, p in m.named_parameters()}
    np.testing.assert_allclose(list(got.values()), list(grads.values()), atol=2e-6)


# ------------------------------------------------------------------ numpy recurrences
def _sig(x):
    return 1 / (1 + np.exp(-x))


def np_rnn(mode, params, x, h0, c0, num_layers, bidirectional, batch_first, proj):
    """PyTorch's documented equations, one step at a time: (output, h_n, c_n)."""
    if batch_first:
        x = x.transpose(1, 0, 2)
    D = 2 if bidirectional else 1
    hn, cn = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = params["weight_ih" + sfx], params["weight_hh" + sfx]
            b_ih = params.get("bias_ih" + sfx, 0.0)
            b_hh = params.get("bias_hh" + sfx, 0.0)
            h, c = h0[layer * D + d], (None if c0 is None else c0[layer * D + d])
            ys = [None] * x.shape[0]
            for t in (range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])):
                gi, gh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
                if mode == "LSTM":
                    i, f, g, o = np.split(gi + gh, 4, axis=1)
                    c = _sig(f) * c + _sig(i) * np.tanh(g)
                    h = _sig(o) * np.tanh(c)
                    if proj:
                        h = h @ params["weight_hr" + sfx].T
                elif mode == "GRU":
                    ir, iz, in_ = np.split(gi, 3, axis=1)
                    hr, hz, hn_ = np.split(gh, 3, axis=1)
                    r, z = _sig(ir + hr), _sig(iz + hz)
                    n = np.tanh(in_ + r * hn_)
                    h = (1 - z) * n + z * h
                else:
                    h = np.tanh(gi + gh) if mode == "RNN_TANH" else np.maximum(gi + gh, 0)
                ys[t] = h
            outs.append(np.stack(ys))
            hn.append(h)
            cn.append(c)
        x = np.concatenate(outs, axis=2)
    if batch_first:
        x = x.transpose(1, 0, 2)
    return x, np.stack(hn), (np.stack(cn) if c0 is not None else None)


CONFIGS = [
    ("LSTM", dict(num_layers=1), False),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), True),
    ("LSTM", dict(num_layers=2, proj_size=2), True),
    ("LSTM", dict(bias=False, bidirectional=True, proj_size=3), False),
    ("GRU", dict(num_layers=3), True),
    ("GRU", dict(bidirectional=True, batch_first=True, bias=False), False),
    ("RNN", dict(num_layers=2, nonlinearity="tanh", bidirectional=True), True),
    ("RNN", dict(nonlinearity="relu", batch_first=True), False),
]


@pytest.mark.parametrize("cls,kw,with_h0", CONFIGS)
def test_forward_matches_numpy(device, cls, kw, with_h0):
    tgrad.manual_seed(0)
    I, H, T, B = 3, 5, 4, 2
    m = getattr(nn, cls)(I, H, **kw).double().to(device)
    params = {n: p.detach().cpu().numpy() for n, p in m.named_parameters()}
    rng = np.random.default_rng(1)
    bf = kw.get("batch_first", False)
    L, D, P = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1, kw.get("proj_size", 0)
    x = rng.normal(size=(B, T, I) if bf else (T, B, I))
    h0 = rng.normal(size=(L * D, B, P or H)) if with_h0 else np.zeros((L * D, B, P or H))
    c0 = rng.normal(size=(L * D, B, H)) if with_h0 else np.zeros((L * D, B, H))
    X = tgrad.tensor(x, device=device)
    if not with_h0:
        y, st = m(X)
    elif cls == "LSTM":
        y, st = m(X, (tgrad.tensor(h0, device=device), tgrad.tensor(c0, device=device)))
    else:
        y, st = m(X, tgrad.tensor(h0, device=device))
    mode = m.mode
    ry, rh, rc = np_rnn(mode, params, x, h0, c0 if cls == "LSTM" else None, L, D == 2, bf, P)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ry, atol=1e-12)
    if cls == "LSTM":
        np.testing.assert_allclose(st[0].detach().cpu().numpy(), rh, atol=1e-12)
        np.testing.assert_allclose(st[1].detach().cpu().numpy(), rc, atol=1e-12)
    else:
        np.testing.assert_allclose(st.detach().cpu().numpy(), rh, atol=1e-12)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_unbatched_input(device, cls):
    tgrad.manual_seed(0)
    m = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True).double().to(device).requires_grad_(False)
    x = tgrad.randn(5, 3, dtype=tgrad.float64, device=device)
    y1, s1 = m(x)
    y2, s2 = m(x.unsqueeze(1))
    assert tuple(y1.shape) == (5, 8)
    np.testing.assert_allclose(y1.cpu().numpy(), y2.squeeze(1).cpu().numpy(), atol=1e-14)
    a, b = (s1[0], s2[0].squeeze(1)) if cls == "LSTM" else (s1, s2.squeeze(1))
    assert tuple(a.shape) == (4, 4)
    np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), atol=1e-14)
    h = tgrad.randn(4, 4, dtype=tgrad.float64, device=device)
    if cls == "LSTM":
        y3, _ = m(x, (h, h))
        y4, _ = m(x.unsqueeze(1), (h.unsqueeze(1), h.unsqueeze(1)))
    else:
        y3, _ = m(x, h)
        y4, _ = m(x.unsqueeze(1), h.unsqueeze(1))
    np.testing.assert_allclose(y3.cpu().numpy(), y4.squeeze(1).cpu().numpy(), atol=1e-14)


@pytest.mark.parametrize("cls,kw", [("LSTM", dict(bidirectional=True, proj_size=1)), ("GRU", dict(num_layers=2)),
                                    ("RNN", dict(batch_first=True))])
def test_gradcheck_module(device, cls, kw):
    tgrad.manual_seed(0)
    m = getattr(nn, cls)(2, 2, **kw).double().to(device)
    x = tgrad.randn(2, 2, 2, dtype=tgrad.float64, device=device, requires_grad=True)

    def f(x, *ps):      # ps are m's own parameters: gradcheck perturbs them in place
        y, h = m(x)
        return (y,) + (h if isinstance(h, tuple) else (h,))
    assert tgrad.autograd.gradcheck(f, (x, *m.parameters()))


def test_cells_match_numpy_and_layers(device):
    tgrad.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4))
    h = rng.normal(size=(3, 5))
    c = rng.normal(size=(3, 5))
    for cls, mode in (("LSTMCell", "LSTM"), ("GRUCell", "GRU"), ("RNNCell", "RNN_TANH")):
        cell = getattr(nn, cls)(4, 5).double().to(device)
        p = {k + "_l0": v.detach().cpu().numpy() for k, v in cell.named_parameters()}
        X, Hx, Cx = (tgrad.tensor(a, device=device) for a in (x, h, c))
        out = cell(X, (Hx, Cx)) if cls == "LSTMCell" else cell(X, Hx)
        _, rh, rc = np_rnn(mode, p, x[None], h[None], c[None] if mode == "LSTM" else None, 1, False, False, 0)
        got = out[0] if cls == "LSTMCell" else out
        np.testing.assert_allclose(got.detach().cpu().numpy(), rh[0], atol=1e-13)
        if cls == "LSTMCell":
            np.testing.assert_allclose(out[1].detach().cpu().numpy(), rc[0], atol=1e-13)
        one = cell(X[0], (Hx[0], Cx[0])) if cls == "LSTMCell" else cell(X[0], Hx[0])    # unbatched
        one = one[0] if cls == "LSTMCell" else one
        np.testing.assert_allclose(one.detach().cpu().numpy(), rh[0][0], atol=1e-13)
    relu = nn.RNNCell(4, 5, nonlinearity="relu").double().to(device)
    assert repr(relu) == "RNNCell(4, 5, nonlinearity=relu)"
    assert tuple(relu(tgrad.tensor(x, device=device)).shape) == (3, 5)


def test_state_dict_names_shapes_and_init():
    """Names and shapes as PyTorch's LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)."""
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True, proj_size=5)
    sd = m.state_dict()
    assert [(k, tuple(v.shape)) for k, v in sd.items()][:5] == [
        ("weight_ih_l0", (80, 10)), ("weight_hh_l0", (80, 5)), ("bias_ih_l0", (80,)), ("bias_hh_l0", (80,)),
        ("weight_hr_l0", (5, 20))]
    assert ("weight_ih_l1_reverse", (80, 10)) in [(k, tuple(v.shape)) for k, v in sd.items()]
    assert len(sd) == 20
    assert repr(m) == "LSTM(10, 20, proj_size=5, num_layers=2, bidirectional=True)"
    for v in sd.values():
        a = v.cpu().numpy()
        assert np.abs(a).max() <= 1 / np.sqrt(20) and a.std() > 0.1
    g = nn.GRU(3, 4, 1, False, True)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"] and g.batch_first
    assert repr(nn.RNN(3, 4, 2, "relu", dropout=0.5)) == "RNN(3, 4, num_layers=2, dropout=0.5)"     # (PyTorch's)
    assert [len(w) for w in m.all_weights] == [5, 5, 5, 5]
    m.flatten_parameters()


def test_dropout_between_layers(device):
    """dropout=1 zeroes the second layer's input while training; eval mode keeps it."""
    tgrad.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, dropout=1.0).double().to(device)
    x = tgrad.randn(5, 2, 3, dtype=tgrad.float64, device=device)
    y, _ = m(x)
    p = {k: v.detach().cpu().numpy() for k, v in m.named_parameters()}
    z = np.zeros((5, 2, 4))
    top = {k.replace("_l1", "_l0"): v for k, v in p.items() if "_l1" in k}
    top["weight_ih_l0"] = np.zeros((16, 4))
    ry, _, _ = np_rnn("LSTM", top, z, np.zeros((1, 2, 4)), np.zeros((1, 2, 4)), 1, False, False, 0)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ry, atol=1e-12)
    m.eval()
    ye, _ = m(x)
    re, _, _ = np_rnn("LSTM", p, x.cpu().numpy(), np.zeros((2, 2, 4)), np.zeros((2, 2, 4)), 2, False, False, 0)
    np.testing.assert_allclose(ye.detach().cpu().numpy(), re, atol=1e-12)


def test_one_fused_launch_per_step(device):
    """LSTM and GRU: one launch per layer-direction for all time steps, each way (the GRU cell op only for a
    PackedSequence)."""
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True).to(device)
    x = tgrad.randn(6, 2, 3, device=device, requires_grad=True)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        y, (h, c) = m(x)
        assert COUNTER.counts["lstm_layer_kernel"] == 4 and COUNTER.counts["lstm_cell_kernel"] == 0
        COUNTER.counts.clear()
        y.sum().backward()
        assert COUNTER.counts["lstm_layer_backward_kernel"] == 4 and sum(COUNTER.counts.values()) < 40
    finally:
        COUNTER.enabled = False
    g = nn.GRU(3, 4).to(device)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        g(x)[0].sum().backward()
        assert COUNTER.counts["gru_layer_kernel"] == 1 and COUNTER.counts["gru_layer_backward_kernel"] == 1
        assert COUNTER.counts["gru_cell_kernel"] == 0
    finally:
        COUNTER.enabled = False


def test_errors(device):
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.LSTM(3, 4.0)
    m = nn.LSTM(3, 4, num_layers=2).to(device)
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        m(tgrad.zeros(1, 2, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(tgrad.zeros(2, 2, 5, device=device))
    h = tgrad.zeros(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 2, 4\), got \[2, 3, 4\]"):
        m(tgrad.zeros(2, 2, 3, device=device), (h, h))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D"):
        m(tgrad.zeros(2, 2, 3, device=device), (h[0], h[0]))
    with pytest.raises(ValueError, match="RNN input dtype"):
        m(tgrad.zeros(2, 2, 3, dtype=tgrad.float64, device=device))
    g = nn.GRU(3, 4).to(device)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        g(tgrad.zeros(2, 2, 3, device=device), tgrad.zeros(1, 3, 4, device=device))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        nn.GRUCell(3, 4)(tgrad.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match="lstm_cell: expected gates of size"):
        nn.functional._op("lstm_cell", tgrad.zeros(2, 12), tgrad.zeros(2, 12), tgrad.zeros(2, 4))


# PyTorch 2.13, float64, parameters det(p.shape, k), x = 3 det(.., 11), lengths [3, 5, 1, 4] packed with
# enforce_sorted=False, padded back to total_length 6: loss = sum(padded * det(.., 5)) + sum(h_n (c_n) * det(.., 7));
# [loss, chk(packed output data), [chk(h_n), chk(c_n)], lengths, batch_sizes, chk(x.grad), [chk(p.grad)...]]
PACKED_REF = [[-0.3441082249, 0.6785027188, [0.7858088417, 1.31576412], [3, 5, 1, 4], [4, 3, 3, 2, 1], -0.1762240986,
  [-0.0787319216, -0.0102406049, 0.1224003774, 0.1224003774, 0.2213314051, -0.1110125701, -0.4162564303,
   -0.4162564303, 0.1344373585, 0.0246024002, -0.5256459321, -0.5256459321, 0.264874772, -0.002294521, 0.1009476215,
   0.1009476215]],
 [-1.0765234876, 1.6681482123, [0.8662191974], [3, 5, 1, 4], [4, 3, 3, 2, 1], 0.0866020332,
  [-0.7350786217, -0.0850341034, 1.4671475428, 0.6782477832, -0.8710632116, 0.2027198247, -2.3031891056,
   -1.458386675]],
 [0.1588744328, -0.0208762878, [-0.0287557872, 0.5467131944], [3, 5, 1, 4], [4, 3, 3, 2, 1], 0.0280552995,
  [-0.0753445871, 0.0042249878, 0.240214449, 0.240214449, 0.03499309]],
 [-0.4538615957, 0.6718125871, [0.8114665157], [3, 5, 1, 4], [4, 3, 3, 2, 1], -0.0254987542,
  [-0.2315151768, -0.0367268226, 0.4699484917, 0.4699484917, -0.1148066356, 0.0226408607, -0.5863523099,
   -0.5863523099]]]
PACKED_CASES = [("LSTM", dict(num_layers=2, bidirectional=True)), ("GRU", dict(bidirectional=True, batch_first=True)),
                ("LSTM", dict(proj_size=2, batch_first=True)), ("RNN", dict(num_layers=2))]


@pytest.mark.parametrize("case", range(4))
def test_packed_sequences_match_pytorch(device, case):
    cls, kw = PACKED_CASES[case]
    rnn_utils = nn.utils.rnn
    m = getattr(nn, cls)(3, 4, **kw).double().to(device)
    with tgrad.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(tgrad.tensor(det(tuple(p.shape), k)))
    bf = kw.get("batch_first", False)
    x = tgrad.tensor(det((4, 5, 3) if bf else (5, 4, 3), 11) * 3, device=device, requires_grad=True)
    pk = rnn_utils.pack_padded_sequence(x, [3, 5, 1, 4], batch_first=bf, enforce_sorted=False)
    out, h = m(pk)
    assert isinstance(out, rnn_utils.PackedSequence)
    pad, lens = rnn_utils.pad_packed_sequence(out, batch_first=bf, total_length=6)
    hs = h if isinstance(h, tuple) else (h,)
    loss = (pad * tgrad.tensor(det(tuple(pad.shape), 5), device=device)).sum()
    for t in hs:
        loss = loss + (t * tgrad.tensor(det(tuple(t.shape), 7), device=device)).sum()
    loss.backward()
    r = PACKED_REF[case]
    np.testing.assert_allclose(loss.item(), r[0], atol=1e-9)
    np.testing.assert_allclose(chk(out.data.detach().cpu().numpy()), r[1], atol=1e-9)
    np.testing.assert_allclose([chk(t.detach().cpu().numpy()) for t in hs], r[2], atol=1e-9)
    assert lens.tolist() == r[3] and out.batch_sizes.tolist() == r[4]
    np.testing.assert_allclose(chk(x.grad.cpu().numpy()), r[5], atol=1e-9)
    np.testing.assert_allclose([chk(p.grad.cpu().numpy()) for p in m.parameters()], r[6], atol=1e-9)


def test_pack_sequence_and_errors(device):
    rnn_utils = nn.utils.rnn
    seqs = [tgrad.tensor([1.0, 2, 3], device=device), tgrad.tensor([4.0], device=device),
            tgrad.tensor([5.0, 6], device=device)]
    ps = rnn_utils.pack_sequence(seqs, enforce_sorted=False)
    assert ps.data.tolist() == [1.0, 5.0, 4.0, 2.0, 6.0, 3.0] and ps.batch_sizes.tolist() == [3, 2, 1]
    assert ps.sorted_indices.tolist() == [0, 2, 1] and ps.unsorted_indices.tolist() == [0, 2, 1]
    assert rnn_utils.pad_sequence(seqs, batch_first=True).tolist() == [[1.0, 2.0, 3.0], [4.0, 0.0, 0.0],
                                                                      [5.0, 6.0, 0.0]]
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(tgrad.zeros(3, 2, 1, device=device), [1, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        rnn_utils.pack_padded_sequence(tgrad.zeros(3, 2, 1, device=device), [3, 0], enforce_sorted=False)


@pytest.mark.parametrize("kw", [{}, {"batch_first": True, "reverse": True}])
def test_lstm_layer_fused_backward_matches_per_step_backward(device, kw):
    """lstm_layer's backward: one lstm_layer_backward launch (+ mm and sum for W_hh, b_hh) normally; under
    create_graph the same gradients from per-step ops (twice differentiable)."""
    rng = np.random.default_rng(0)
    T, B, H = 5, 3, 4
    shapes = [(B, T, 4 * H) if kw else (T, B, 4 * H), (4 * H, H), (4 * H,), (B, H), (B, H)]
    args = [tgrad.tensor(rng.normal(size=s) * 0.5, device=device, requires_grad=True) for s in shapes]
    gy = tgrad.tensor(rng.normal(size=shapes[0][:2] + (H,)), device=device)
    gh, gc = (tgrad.tensor(rng.normal(size=(B, H)), device=device) for _ in range(2))

    def grads(create_graph):
        y, h, c, _, _ = tgrad.autograd.dispatch.call("lstm_layer", *args, **kw)
        return tgrad.autograd.grad((y, h, c), args, (gy, gh, gc), create_graph=create_graph)
    COUNTER.enabled = True
    try:
        COUNTER.counts.clear()
        fused = grads(False)
        assert COUNTER.counts["lstm_layer_backward_kernel"] == 1 and COUNTER.counts["lstm_cell_backward_kernel"] == 0
        COUNTER.counts.clear()
        steps = grads(True)
        assert COUNTER.counts["lstm_layer_backward_kernel"] == 0 and COUNTER.counts["lstm_cell_backward_kernel"] == T
    finally:
        COUNTER.enabled = False
    for a, b in zip(fused, steps):
        np.testing.assert_allclose(a.cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-12, atol=1e-13)
