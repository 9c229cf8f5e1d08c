"""tgrad.compile of the sequence-model steps: the LSTM language model (benchmarks/steps.py (f)) and a step that
builds positions with ``arange`` (the GPT's), replayed bit for bit."""
import os
import sys
import warnings

import numpy as np

import tgrad
import tgrad.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import steps as S  # noqa: E402


def _replayed(fn):
    entries = list(fn._cache.values())
    return any(e.run is not None for e in entries) and not any(e.eager for e in entries)


def test_lstm_lm_step_replays_bit_identical():
    """(f): hidden state carried between calls as an output and an argument, dropout draws, clipping."""
    eager = S.build("f", tgrad)
    want = [eager().item() for _ in range(5)]       # one after the other: dropout draws from the default generator
    comp = S.build("f", tgrad, compile=True)        # (build seeds it again)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no "runs eagerly", no cache thrash
        assert [comp().item() for _ in range(5)] == want
    assert _replayed(next(c.cell_contents for c in comp.__closure__ if hasattr(c.cell_contents, "_cache")))


def _pos_model():
    tgrad.manual_seed(0)
    return nn.Embedding(16, 4), nn.Embedding(8, 4)


def test_arange_in_the_step_replays_and_follows_the_shape():
    """Positions from ``arange(T)`` (T a guarded shape) are a cached constant copy the replay may repeat; a new
    T records again."""
    (wte, wpe), (wte2, wpe2) = _pos_model(), _pos_model()

    def step(tok, wte, wpe):
        pos = tgrad.arange(0, tok.size(1), dtype=tgrad.long)
        loss = (wte(tok) + wpe(pos)).square().sum()
        loss.backward()
        return loss

    compiled = tgrad.compile(step)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for T in (5, 5, 5, 5, 7, 7, 7, 5):
            tok = tgrad.tensor(rng.integers(0, 16, (2, T)))
            want, got = step(tok, wte, wpe), compiled(tok, wte2, wpe2)
            assert np.array_equal(want.detach().cpu().numpy(), got.detach().cpu().numpy()), T
    assert _replayed(compiled)
    assert np.array_equal(wpe.weight.grad.cpu().numpy(), wpe2.weight.grad.cpu().numpy())


def test_arange_values_and_signed_zero():
    for args in [(5,), (1, 11, 3), (0.0, 1.0, 0.1), (-0.0, -3.0, -1.0), (0.0, -3.0, -1.0), (3, -2, -2)]:
        got = tgrad.arange(*args).cpu().numpy()
        np.testing.assert_array_equal(got, np.arange(*args).astype(got.dtype))
    assert np.signbit(tgrad.arange(-0.0, -3.0, -1.0).cpu().numpy()[0])          # PyTorch 2.13: tensor([-0., -1., -2.])
    assert not np.signbit(tgrad.arange(0.0, -3.0, -1.0).cpu().numpy()[0])       # (after the -0.0 one: not cached as it)
    assert tgrad.arange(1 << 17)[-1].item() == (1 << 17) - 1                 # above the cached size
