"""OpInfos of the random family.  ``multinomial``: draws whose result is certain (one-hot rows with replacement;
every category of a row without replacement, compared sorted), so the numpy reference is exact.  Drawn from a
Philox generator (the kernel, as on cuda); the cpu generator's host path is tested against PyTorch's
numbers in tests/test_random_torch.py.  ``poisson``, ``binomial``, ``_standard_gamma``, ``_sample_dirichlet``:
PyTorch's numbers for a seeded generator, and certain draws.  ``_standard_gamma_grad``, ``_dirichlet_grad``: the
implicit gradients against central differences of the incomplete gamma / beta functions (series and continued
fraction here)."""
import math

import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch
from tgrad.random import Generator

from ..opinfo import OpInfo, SampleInput


def _multinomial_sorted(p, **k):
    out = dispatch.call("multinomial", p, generator=Generator(p.device, _philox=True), **k)
    return dispatch.call("sort", out, dim=-1)[0]


def _ref(p, num_samples, replacement=False):
    if replacement:             # one-hot rows: every draw is the row's category
        return np.repeat(np.argmax(p, axis=-1)[..., None], num_samples, axis=-1)
    return np.broadcast_to(np.arange(num_samples), p.shape[:-1] + (num_samples,))     # (num_samples == K)


def _samples(rng):
    eye = np.eye(5)[[3, 0, 4]] * rng.uniform(0.5, 2, (3, 1))
    return [SampleInput(eye, num_samples=7, replacement=True),
            SampleInput(eye[1], num_samples=1, replacement=True),
            SampleInput(np.eye(40)[rng.integers(0, 40, 6)], num_samples=300, replacement=True),
            SampleInput(rng.uniform(0.1, 1, (4, 6)), num_samples=6),
            SampleInput(rng.uniform(0.1, 1, (9,)), num_samples=9),
            SampleInput(rng.uniform(0.1, 1, (0, 3)), num_samples=2)]


OPS = [
    OpInfo("multinomial", _multinomial_sorted, _ref, _samples, dtypes=(D.float32, D.float64, D.float16, D.bfloat16),
           grad=False, gradgrad=False, covers=("sort",)),
]


# ---------------------------------------------------------------- ATen's rejection samplers and their gradients
# Each sampler draws from its own generator seeded 0, and the references are the numbers PyTorch 2.13 prints for
# the same call (torch.<op>(..., generator=torch.Generator().manual_seed(0)), computed in /work/venv-torch), the
# inputs exactly representable in both dtypes so one list serves float32 and float64.
def _seeded(name):
    def op(*args):         # (a cpu generator on any device: the host samplers take it, and so PyTorch's numbers)
        return dispatch.call(name, *args, generator=Generator().manual_seed(0))
    return op


def _poisson_ref(rate):
    if rate.shape == (6,):
        return np.array([2.0, 4.0, 13.0, 99.0, 0.0, 8.0])       # PyTorch 2.13, seed 0
    return np.zeros_like(rate)


def _binomial_ref(count, prob):
    if count.shape == (6,):
        return np.array([2.0, 25.0, 84.0, 0.0, 7.0, 14.0])      # PyTorch 2.13, seed 0
    return np.where(prob >= 1, count, 0.0) * np.ones_like(count)


def _gamma_ref(alpha):
    if alpha.shape == (5,):                                     # PyTorch 2.13, seed 0 (float64)
        return np.array([5.354234536555022e-07, 0.11898370896786938, 2.411419329661992, 17.09796214593858,
                         0.5202051043580176])
    return np.full(alpha.shape, np.finfo(alpha.dtype).tiny)


def _dirichlet_ref(alpha):
    if alpha.shape == (2, 3):                                   # PyTorch 2.13, seed 0 (float64)
        return np.array([[0.0003942486938404249, 0.05942697684226839, 0.9401787744638913],
                         [0.20220471255209732, 0.2550057489066152, 0.5427895385412876]])
    return np.ones_like(alpha)                                  # one category: 1 (less one ulp)


def _poisson_samples(rng):
    return [SampleInput(np.array([0.5, 3, 12, 100, 0, 7.5]), grad=False), SampleInput(np.zeros((3, 4)), grad=False)]


def _binomial_samples(rng):
    return [SampleInput(np.array([5, 40, 100, 0, 7, 1000.]), np.array([0.25, 0.5, 0.875, 0.375, 1.0, 0.015625]),
                        grad=False),
            SampleInput(np.array([[3.0], [12.0]]) * np.ones((2, 5)), np.array([0, 1, 1, 0, 1.0]), grad=False)]


def _gamma_samples(rng):
    return [SampleInput(np.array([0.25, 1, 2.5, 20, 0.75]), grad=False), SampleInput(np.zeros((2, 3)), grad=False)]


def _dirichlet_samples(rng):
    return [SampleInput(np.array([[0.5, 1, 2], [3, 3, 3]]), grad=False),
            SampleInput(rng.uniform(0.5, 2, (4, 1)), grad=False)]


def _lower_gamma(a, x):
    """Regularized lower incomplete gamma P(a, x) by its power series (float64, x <= ~60)."""
    term = total = 1.0 / a
    k = a
    while abs(term) > 1e-17 * abs(total):
        k += 1
        term *= x / k
        total += term
    return total * math.exp(a * math.log(x) - x - math.lgamma(a))


def _gamma_grad_ref(alpha, x):
    """The implicit gradient -(dP(a, x) / da) / pdf(x; a) by central differences (h = 1e-5 a)."""
    out = np.empty(np.broadcast(alpha, x).shape)
    for i, (a, v) in enumerate(zip(*(np.broadcast_to(t, out.shape).reshape(-1) for t in (alpha, x)))):
        h = 1e-5 * a
        dp = (_lower_gamma(a + h, v) - _lower_gamma(a - h, v)) / (2 * h)
        out.reshape(-1)[i] = -dp / math.exp((a - 1) * math.log(v) - v - math.lgamma(a))
    return out


def _betacf(a, b, x):
    """Lentz's continued fraction of the incomplete beta function (Numerical Recipes' betacf)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 3000):
        aa = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        for coef in (aa, -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + coef * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + coef / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def _dirichlet_grad_ref(x, alpha, total):
    """-(d I_x(alpha, beta) / d alpha) / pdf(x) / (1 - x), beta = total - alpha held, by central differences."""
    out = np.empty(x.shape)
    for i, (v, a, t) in enumerate(zip(x.reshape(-1), alpha.reshape(-1), total.reshape(-1))):
        b = t - a
        h = 1e-5 * a
        di = (_betainc(a + h, b, v) - _betainc(a - h, b, v)) / (2 * h)
        pdf = math.exp((a - 1) * math.log(v) + (b - 1) * math.log1p(-v) + math.lgamma(a + b) - math.lgamma(a)
                       - math.lgamma(b))
        out.reshape(-1)[i] = -di / pdf / (1 - v)
    return out


def _gamma_grad_samples(rng):
    # every branch of ATen's formula: x < 0.8 (series), alpha > 8 near and far from the mode, the rational fit
    alpha = np.array([0.3, 0.9, 1.5, 3.0, 9.0, 20.0, 20.0, 20.0, 0.05, 5.0, 12.0])
    x = np.array([0.1, 1.2, 0.5, 4.0, 9.5, 14.0, 30.0, 20.0, 0.5, 2.0, 11.5])
    return [SampleInput(alpha, x, grad=False), SampleInput(rng.uniform(0.5, 4, (3, 4)), rng.uniform(0.9, 5, (3, 4)), grad=False)]


def _dirichlet_grad_samples(rng):
    # near 0 (alpha series), near 1 (beta series), both concentrations large (saddle point), the rational fit
    x = np.array([0.05, 0.3, 0.97, 0.6, 0.45, 0.5, 0.2, 0.8])
    alpha = np.array([0.5, 2.0, 3.0, 9.0, 10.0, 1.5, 4.0, 5.0])
    total = np.array([3.0, 5.0, 3.5, 16.0, 22.0, 3.0, 12.0, 6.5])
    return [SampleInput(x, alpha, total, grad=False),
            SampleInput(rng.uniform(0.3, 0.7, (2, 3)), np.full((2, 3), 2.0), np.full((2, 3), 5.0), grad=False)]


OPS += [
    OpInfo("poisson", _seeded("poisson"), _poisson_ref, _poisson_samples, dtypes=(D.float32, D.float64, D.float16),
           grad=False, gradgrad=False),
    OpInfo("binomial", _seeded("binomial"), _binomial_ref, _binomial_samples, grad=False, gradgrad=False),
    OpInfo("_standard_gamma", _seeded("_standard_gamma"), _gamma_ref, _gamma_samples, grad=False, gradgrad=False),
    OpInfo("_sample_dirichlet", _seeded("_sample_dirichlet"), _dirichlet_ref, _dirichlet_samples, grad=False,
           gradgrad=False),
    # ATen's approximations (series, saddle point, rational fits) are good to a few 1e-4 relative
    OpInfo("_standard_gamma_grad", lambda a, x: dispatch.call("_standard_gamma_grad", a, x), _gamma_grad_ref,
           _gamma_grad_samples, grad=False, gradgrad=False, tol={"float64": (1e-6, 2e-3), "float32": (1e-5, 2e-3)}),
    OpInfo("_dirichlet_grad", lambda x, a, t: dispatch.call("_dirichlet_grad", x, a, t), _dirichlet_grad_ref,
           _dirichlet_grad_samples, grad=False, gradgrad=False, tol={"float64": (1e-6, 2e-3), "float32": (1e-5, 2e-3)}),
]
