"""multinomial: the distribution it draws from, reproducibility by generator, PyTorch's errors.

On cpu the draws are PyTorch's (bit for bit: tests/test_random_torch.py); on cuda they come from tgrad's
Philox generator.  Checked here on every device: the distribution and the argument handling."""
import numpy as np
import pytest

import tgrad


def test_frequencies_with_replacement(device):
    tgrad.manual_seed(0)
    p = tgrad.tensor([0.1, 0.2, 0.0, 0.7], device=device)
    s = tgrad.multinomial(p, 20000, replacement=True)
    assert s.dtype == tgrad.int64 and tuple(s.shape) == (20000,)
    f = np.bincount(s.cpu().numpy(), minlength=4) / 20000
    np.testing.assert_allclose(f, [0.1, 0.2, 0.0, 0.7], atol=0.015)     # ~5 standard errors
    assert f[2] == 0


def test_without_replacement_distinct_and_in_draw_order(device):
    tgrad.manual_seed(1)
    P = np.array([0.1, 0.2, 0.3, 0.4])
    s = tgrad.tensor(np.tile(P, (4000, 1)), dtype=tgrad.float32, device=device).multinomial(2).cpu().numpy()
    assert (s[:, 0] != s[:, 1]).all()
    np.testing.assert_allclose(np.bincount(s[:, 0], minlength=4) / 4000, P, atol=0.04)
    second = [sum(P[j] * P[i] / (1 - P[j]) for j in range(4) if j != i) for i in range(4)]
    np.testing.assert_allclose(np.bincount(s[:, 1], minlength=4) / 4000, second, atol=0.04)
    # zero-probability categories come last (PyTorch 2.13: multinomial([0., 1., 0.], 2) == [1, 0])
    assert tgrad.multinomial(tgrad.tensor([0.0, 1.0, 0.0], device=device), 2).cpu().tolist() == [1, 0]
    full = tgrad.multinomial(tgrad.rand(3, 9, device=device) + 0.1, 9).cpu().numpy()
    assert (np.sort(full, axis=1) == np.arange(9)).all()


def test_generator_reproducible_and_advances(device):
    g = tgrad.Generator(device).manual_seed(3)
    p = tgrad.softmax(tgrad.arange(27.0, device=device) / 10, 0)
    a = tgrad.multinomial(p, 8, True, generator=g)
    b = tgrad.multinomial(p, 8, True, generator=g)
    g.manual_seed(3)
    c = tgrad.multinomial(p, 8, True, generator=g)
    assert a.cpu().tolist() == c.cpu().tolist() and a.cpu().tolist() != b.cpu().tolist()
    tgrad.manual_seed(5)
    d = p.multinomial(8, replacement=True)
    tgrad.manual_seed(5)
    assert d.cpu().tolist() == p.multinomial(8, replacement=True).cpu().tolist()


def test_makemore_style_sampling(device):
    """One index per step from softmax(logits) with a seeded generator, as makemore samples names."""
    g = tgrad.Generator(device).manual_seed(2147483647)
    W = tgrad.randn((27, 27), generator=g, device=device)
    ix, out = 0, []
    for _ in range(20):
        p = tgrad.softmax(W[ix], dim=0)
        ix = tgrad.multinomial(p, num_samples=1, replacement=True, generator=g).item()
        out.append(ix)
        assert 0 <= ix < 27
    assert len(set(out)) > 3


def test_errors(device):
    one = tgrad.ones(3, device=device)
    cases = [(lambda: tgrad.multinomial(tgrad.ones(2, 2, 2, device=device), 1), "prob_dist must be 1 or 2 dim"),
             (lambda: tgrad.multinomial(tgrad.ones(3, dtype=tgrad.int64, device=device), 1),
              "multinomial only supports floating-point dtypes for input, got: Long"),
             (lambda: tgrad.multinomial(one, 0), "cannot sample n_sample <= 0 samples"),
             (lambda: tgrad.multinomial(one, 4), "cannot sample n_sample > prob_dist.size\\(-1\\) samples without "
                                                 "replacement"),
             (lambda: tgrad.multinomial(tgrad.tensor([1.0, -1.0], device=device), 1),
              "probability tensor contains either `inf`, `nan` or element < 0"),
             (lambda: tgrad.multinomial(tgrad.tensor([1.0, float("nan")], device=device), 1),
              "probability tensor contains either `inf`, `nan` or element < 0"),
             (lambda: tgrad.multinomial(tgrad.zeros(2, device=device), 1),
              "invalid multinomial distribution \\(sum of probabilities <= 0\\)")]
    for f, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            f()
    assert tuple(tgrad.multinomial(tgrad.ones(0, 3, device=device), 2).shape) == (0, 2)
