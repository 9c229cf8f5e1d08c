"""OpInfos for complex numbers: real arrays in (real and imaginary parts), real arrays out (view_as_real, abs,
angle), so the generic forward, gradcheck and gradgradcheck tests check the complex ops and their gradients
in PyTorch's convention through real functions."""
import numpy as np

from ..opinfo import OpInfo, SampleInput
from ..._functional_more import complex as cx, polar, view_as_complex, view_as_real


def _parts(rng, shapes=((3,), (2, 5), (7,), ())):
    out = []
    for s in shapes:
        re, im = rng.uniform(0.5, 2, s), rng.uniform(0.5, 2, s) * rng.choice([-1, 1], s)
        out.append(SampleInput(re, im, grad=int(np.prod(s)) <= 12))
    return out


def _two(rng):
    out = []
    for s, t in [((4,), (4,)), ((2, 3), (3,)), ((1,), (5,))]:
        out.append(SampleInput(rng.standard_normal(s), rng.standard_normal(s), rng.uniform(0.5, 2, t),
                               rng.uniform(-2, 2, t)))
    return out


def _pairs(rng):
    return [SampleInput(rng.uniform(-1, 1, s + (2,))) for s in [(3,), (2, 4), ()]]


def _r(z):
    return np.stack([z.real, z.imag], -1)


OPS = [
    OpInfo("complex", lambda a, b, c, d: view_as_real(cx(a, b) * cx(c, d) / cx(d, c)),
           lambda a, b, c, d: _r((a + 1j * b) * (c + 1j * d) / (d + 1j * c)), _two),
    OpInfo("view_as_complex", lambda x: view_as_real(view_as_complex(x.contiguous()).exp() - 1j),
           lambda x: _r(np.exp(x[..., 0] + 1j * x[..., 1]) - 1j), _pairs),
    OpInfo("real", lambda a, b: cx(a, b).real * 2 - cx(a, b).imag * cx(b, a).imag,
           lambda a, b: a * 2 - b * a, _parts),
    OpInfo("polar", lambda a, b: view_as_real(polar(a, b)), lambda a, b: _r(a * np.exp(1j * b)), _parts),
    OpInfo("conj_physical", lambda a, b: view_as_real(cx(a, b).conj_physical() * cx(b, a) - cx(a, a).neg()),
           lambda a, b: _r((a - 1j * b) * (b + 1j * a) + (a + 1j * a)), _parts),
    # the lazy conjugate view (conj), read by mul through resolve_conj
    OpInfo("conj", lambda a, b: view_as_real(cx(a, b).conj().reshape(-1) * cx(b, a).reshape(-1)),
           lambda a, b: _r(((a - 1j * b) * (b + 1j * a)).reshape(-1)), _parts),
    OpInfo("angle", lambda a, b: cx(a, b).angle() + cx(a, b).abs(),
           lambda a, b: np.angle(a + 1j * b) + np.abs(a + 1j * b), _parts),
    OpInfo("sgn", lambda a, b: view_as_real(cx(a, b).sgn() + cx(a, b).sum()),
           lambda a, b: _r((a + 1j * b) / np.abs(a + 1j * b) + (a + 1j * b).sum()), _parts),
]
