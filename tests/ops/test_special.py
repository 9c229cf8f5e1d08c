"""The special family beyond its OpInfos: PyTorch's printed values (tests/data/make_special_ref.py), exact
incomplete gamma values (mpmath, in the same file) where ATen's own are less accurate, PyTorch's errors and
backward rules."""
import os

import numpy as np
import pytest

import tgrad
import tgrad.special as S

REF = np.load(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "special_ref.npz"))


def _ulps(got, want, dtype):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    got, want = np.where(same, 0.0, got), np.where(same, 0.0, want)
    spacing = np.abs(np.spacing(want.astype(dtype))).astype(np.float64)
    d = np.where(same, 0.0, np.abs(got - want) / np.where(spacing > 0, spacing, 1.0))
    return float(np.max(d))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", [("i0", tgrad.i0), ("i0e", S.i0e), ("i1", S.i1), ("i1e", S.i1e)])
def test_bessel_matches_pytorch(name, fn, dtype, device):
    """ATen's Chebyshev tables in the input's precision, each Clenshaw step one fma (as ATen's compiled code):
    PyTorch's bits on cpu (a GPU's exp may differ by an ulp), inf and NaN in the same places."""
    x = tgrad.tensor(REF["x"], dtype=getattr(tgrad, dtype), device=device)
    got = fn(x).cpu().numpy()
    want = REF[f"{name}_{dtype}"]
    assert _ulps(got, want, np.dtype(dtype)) <= (0 if device == "cpu" else 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_igamma_exact_and_near_pytorch(dtype, device):
    """igamma/igammac in float64 for every dtype: float32 within 2 ulp of mpmath's exact values, float64 within
    2e-14 relative (x^a e^-x / Gamma(a) from logs of size ~100 in the tails); ATen's float64 is off by up to
    ~2e-9 relative where it takes its asymptotic series (it multiplies by float pi), its float32 by ~2e-5."""
    dt = getattr(tgrad, dtype)
    a = tgrad.tensor(REF["a"], dtype=dt, device=device)
    x = tgrad.tensor(REF["ax"], dtype=dt, device=device)
    for name, fn in [("igamma", tgrad.igamma), ("igammac", tgrad.igammac)]:
        got = fn(a, x).cpu().numpy().astype(np.float64)
        exact = REF[f"{name}_mp_{dtype}"]
        if dtype == "float32":
            assert _ulps(got, exact, np.dtype(dtype)) <= 2, name
        else:
            np.testing.assert_allclose(got, exact, rtol=2e-14, atol=0)
        np.testing.assert_allclose(got, REF[f"{name}_{dtype}"], rtol=3e-9 if dtype == "float64" else 3e-5,
                                   atol=1e-30)
    np.testing.assert_array_equal(S.gammainc(a, x).cpu().numpy(), tgrad.igamma(a, x).cpu().numpy())
    np.testing.assert_array_equal(S.gammaincc(a, x).cpu().numpy(), tgrad.igammac(a, x).cpu().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp_and_nextafter_match_pytorch(dtype, device):
    dt = getattr(tgrad, dtype)
    f = tgrad.tensor(REF["f"], dtype=dt, device=device)
    m, e = tgrad.frexp(f)
    assert e.dtype == tgrad.int32
    np.testing.assert_array_equal(m.cpu().numpy(), REF[f"frexp_m_{dtype}"])
    np.testing.assert_array_equal(e.cpu().numpy(), REF[f"frexp_e_{dtype}"])
    np.testing.assert_array_equal(tgrad.nextafter(f, tgrad.tensor(REF["ny"], dtype=dt, device=device)).cpu().numpy(),
                                  REF[f"nextafter_{dtype}"])


def test_nextafter_bfloat16_matches_pytorch(device):
    f = tgrad.tensor(REF["f"], dtype=tgrad.bfloat16, device=device)
    y = tgrad.tensor(REF["ny"], dtype=tgrad.bfloat16, device=device)
    # (the host copy's bits: tgrad's bfloat16 -> float32 cast flushes subnormals, PyTorch's does not)
    np.testing.assert_array_equal(f.nextafter(y).cpu()._host_copy().astype(np.float32), REF["nextafter_bfloat16"])


def test_errors_and_dtypes(device):
    i = tgrad.tensor([1, 2], device=device)
    kind = i.device.type
    with pytest.raises(NotImplementedError, match=f"\"igamma_{kind}\" not implemented for 'Long'"):
        tgrad.igamma(i, i)
    with pytest.raises(NotImplementedError, match=f"\"nextafter_{kind}\" not implemented for 'Long'"):
        tgrad.nextafter(i, i)
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point dtypes"):
        tgrad.frexp(i)
    with pytest.raises(TypeError, match="must be Tensor"):
        tgrad.igamma(tgrad.tensor([1.0]), 2.0)
    assert tgrad.i0(i).dtype == tgrad.float32 and S.i1e(i).dtype == tgrad.float32
    assert tgrad.igamma(tgrad.tensor([1.0], device=device),
                        tgrad.tensor([1.0], dtype=tgrad.float64, device=device)).dtype == tgrad.float64
    x = tgrad.tensor([0.5, 2.0], device=device)
    assert x.i0_() is x and np.allclose(x.cpu().numpy(), np.i0([0.5, 2.0]), rtol=1e-6)
    r = repr(tgrad.frexp(tgrad.tensor([3.0])))
    assert r.startswith("tgrad.return_types.frexp(\nmantissa=") and "exponent=" in r


@pytest.mark.cpu_only
def test_backward_rules():
    """derivatives.yaml: i0' = i1, i1'(0) = 1/2, igamma's input derivative not implemented, frexp's grad / 2^e,
    nextafter's grad where self != other (0 for other)."""
    x = tgrad.tensor([0.0, 1.5, -3.0], dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(S.i1(x).sum(), x)
    assert g[0].item() == 0.5
    np.testing.assert_allclose(g[1:].numpy(), (tgrad.i0(x) - S.i1(x) / x).detach().numpy()[1:], rtol=1e-14)
    (g,) = tgrad.autograd.grad(S.i1e(x).sum(), x)
    assert g[0].item() == 0.5
    (g,) = tgrad.autograd.grad(tgrad.i0(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), S.i1(x).detach().numpy())
    assert type(tgrad.i0(x).grad_fn).__name__ == "I0Backward0"
    assert type(S.i0e(x).grad_fn).__name__ == "SpecialI0EBackward0"
    a = tgrad.tensor([2.0], requires_grad=True)
    v = tgrad.tensor([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented."):
        tgrad.igamma(a, v).sum().backward()
    with pytest.raises(NotImplementedError, match="the derivative for 'igammac: input' is not implemented."):
        tgrad.igammac(a, v).sum().backward()
    (g,) = tgrad.autograd.grad(tgrad.igammac(a.detach(), v).sum(), v)
    assert g.item() == pytest.approx(-np.exp(-1.0), rel=1e-6)
    f = tgrad.tensor([3.0, -0.1], requires_grad=True)
    m, e = tgrad.frexp(f)
    assert not e.requires_grad and type(m.grad_fn).__name__ == "FrexpBackward0"
    m.sum().backward()
    np.testing.assert_array_equal(f.grad.numpy(), [0.25, 8.0])
    p = tgrad.tensor([1.0, 2.0], requires_grad=True)
    q = tgrad.tensor([2.0, 2.0], requires_grad=True)
    tgrad.nextafter(p, q).sum().backward()
    assert p.grad.tolist() == [1.0, 0.0] and q.grad.tolist() == [0.0, 0.0]


@pytest.mark.cpu_only
def test_igamma_gradient_in_x_is_the_density_large_a():
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a), against central differences of P itself at a = 250."""
    a = tgrad.tensor([250.0, 3.5], dtype=tgrad.float64)
    x = tgrad.tensor([240.0, 1.25], dtype=tgrad.float64, requires_grad=True)
    (g,) = tgrad.autograd.grad(tgrad.igamma(a, x).sum(), x)
    h = 1e-5
    fd = (tgrad.igamma(a, x.detach() + h) - tgrad.igamma(a, x.detach() - h)) / (2 * h)
    np.testing.assert_allclose(g.numpy(), fd.numpy(), rtol=1e-7)
