"""nn.utils.weight_norm / spectral_norm (hook forms), nn.utils.parametrize and parametrizations.weight_norm /
spectral_norm.  The reference numbers were printed by PyTorch 2.13 (/work/venv-torch) running the same seeded
calls (the spectral-norm vectors u, v are normal draws, so they match only when the draws do)."""
import warnings

import numpy as np
import pytest

import tgrad as torch
import tgrad.nn as nn
from tgrad.autograd import gradcheck
from tgrad.nn import utils as U
from tgrad.nn.utils import parametrizations as P
from tgrad.nn.utils import parametrize

CPU_ONLY = True     # seeded values are PyTorch's cpu random stream (conftest)


def close(a, b, tol=1e-5):
    a = np.asarray(a.detach().reshape(-1).tolist() if hasattr(a, "detach") else a, dtype=np.float64)
    np.testing.assert_allclose(a[:len(b)], np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


def test_weight_norm_hook_form():
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        m = U.weight_norm(nn.Linear(4, 3))
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert m.weight_g.shape == (3, 1)
    close(m.weight_g, [0.655293, 0.582849, 0.706627])
    y = m(x)
    close(y, [-1.681666, 0.652093, 0.286135, -0.484558, 1.231626, 0.363173])
    y.sum().backward()
    close(m.weight_g.grad, [-2.900093, 2.567563, 0.92298])
    close(m.weight_v.grad, [-0.619454, -1.86122, -0.368421, -0.464274, 1.123834, -1.537747])
    U.remove_weight_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    close(m.weight, [-0.080592, 0.052907, 0.452738, -0.463835, -0.314769, -0.126583])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = U.weight_norm(nn.Conv2d(2, 3, 2), dim=None)
    assert c.weight_g.shape == ()
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in Linear"):
        U.remove_weight_norm(nn.Linear(2, 2))


def test_weight_norm_parametrization():
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        U.weight_norm(nn.Linear(4, 3))                 # the same draws as the hook test
    nn.Conv2d(2, 3, 2)
    m = P.weight_norm(nn.Linear(4, 3))
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    names = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert [n for n, _ in m.named_parameters()] == names and list(m.state_dict()) == names
    y = m(x)
    close(y, [-0.361512, -1.045456, -0.388893, 0.390709, 0.787781, -1.879117])
    y.pow(2).sum().backward()
    close(m.parametrizations.weight.original0.grad, [1.02733, 5.210961, 8.683775])
    close(m.parametrizations.weight.original1.grad, [-1.833942, -0.994237, 1.478201, -0.642213, -1.719884, -0.06264])
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    g = torch.randn(3, 1, dtype=torch.float64, requires_grad=True)
    v = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, b: P._WeightNorm(0)(a, b), (g, v))


def test_spectral_norm_hook_form():
    torch.manual_seed(1)
    s = U.spectral_norm(nn.Linear(5, 4))
    assert [n for n, _ in s.named_parameters()] == ["bias", "weight_orig"]
    assert list(s.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    y = s(torch.ones(2, 5))
    close(y, [-0.63767, 0.461449, 0.107516, 0.790879, -0.63767, 0.461449])
    close(s.weight_u, [-0.762591, -0.60787, -0.208788, 0.073188])
    close(s.weight, [0.410025, -0.351231, -0.154267, 0.373505, -0.749157, 0.477231])
    y.sum().backward()
    close(s.weight_orig.grad, [0.850195, 5.149173, 2.173202, 2.834272, 5.196032, 1.399731])
    s.eval()
    close(s(torch.ones(1, 5)), [-0.63767, 0.461449, 0.107516, 0.790879])
    U.remove_spectral_norm(s)
    assert [n for n, _ in s.named_parameters()] == ["bias", "weight"]
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        U.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_spectral_norm_parametrization_and_parametrize():
    torch.manual_seed(2)
    ps = P.spectral_norm(nn.Conv2d(2, 3, 3))
    close(ps.parametrizations.weight[0]._u, [-0.098797, -0.852725, 0.512933])
    close(ps.parametrizations.weight[0]._v, [0.213618, -0.399983, 0.279617, -0.087863, -0.05463, -0.444343])
    z = ps(torch.ones(1, 2, 4, 4))
    close(z, [0.107509, 0.107509, 0.107509, 0.107509, -0.978935, -0.978935])
    z.sum().backward()
    close(ps.parametrizations.weight.original.grad, [6.873618, 6.755667, 6.886314, 6.815671, 6.822062, 6.747151])
    ps.eval()
    with parametrize.cached():
        close(ps.weight, [0.092355, -0.095811, 0.110408, -0.020565, 0.171991, 0.095851])
        assert ps.weight is ps.weight
    assert ps.weight is not ps.weight

    class Sym(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    lin = nn.Linear(3, 3)
    parametrize.register_parametrization(lin, "weight", Sym())
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    assert parametrize.is_parametrized(lin) and not parametrize.is_parametrized(lin, "bias")
    assert parametrize.type_before_parametrizations(lin) is nn.Linear
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with "
                                         "name 'foo'"):
        parametrize.register_parametrization(nn.Linear(2, 2), "foo", Sym())
