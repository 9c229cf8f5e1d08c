"""Module extra state and state-dict hooks, to_empty, nn.modules.utils' tuple helpers, nn.attention.sdpa_kernel:
printed by PyTorch 2.13 for the same calls (/tmp programs compared line by line; the values are hard-coded here)."""
import numpy as np
import pytest

import tgrad as torch
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.nn.attention import SDPBackend, sdpa_kernel
from tgrad.nn.modules.utils import _list_with_default, _pair, _quadruple, _reverse_repeat_tuple, _single, _triple

CPU_ONLY = True     # module state and flags: nothing device-specific (the attention values are cpu's)


class _WithExtra(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.count = 3

    def get_extra_state(self):
        return {"count": self.count}

    def set_extra_state(self, state):
        self.count = state["count"]


def test_extra_state_round_trip_and_missing_key():
    sd = _WithExtra().state_dict()
    assert list(sd) == ["_extra_state", "lin.weight", "lin.bias"] and sd["_extra_state"] == {"count": 3}
    m = _WithExtra()
    m.count = 0
    assert str(m.load_state_dict(sd)) == "<All keys matched successfully>" and m.count == 3
    sd.pop("_extra_state")
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state".'):
        _WithExtra().load_state_dict(sd)
    assert "_extra_state" not in nn.Linear(2, 2).state_dict()
    with pytest.raises(RuntimeError, match="Reached a code path in Module.get_extra_state"):
        nn.Linear(2, 2).get_extra_state()


def test_state_dict_hooks():
    m = nn.Linear(2, 2)
    calls = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep: calls.append((prefix, keep)))
    h = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.__setitem__(prefix + "extra", torch.ones(1)))
    assert list(m.state_dict()) == ["weight", "bias", "extra"] and calls == [("", False)]
    m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *a: sd.pop(prefix + "extra", None))
    assert str(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    h.remove()
    assert list(m.state_dict()) == ["weight", "bias"]
    # a post hook may clear the incompatible keys in place: the strict load then passes
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    assert str(m.load_state_dict({"weight": torch.zeros(2, 2)})) == "<All keys matched successfully>"
    assert m.weight.abs().sum().item() == 0
    m.register_load_state_dict_post_hook(lambda mod, keys: 1)
    with pytest.raises(RuntimeError, match="are notexpected to return new values"):
        m.load_state_dict(m.state_dict())


def test_to_empty_keeps_shapes_and_types():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to_empty(device="cpu")
    assert m[0].weight.shape == (4, 3) and isinstance(m[0].weight, nn.Parameter) and m[1].running_mean.shape == (4,)


def test_tuple_helpers():
    assert (_pair(3), _single([1]), _triple((1, 2, 3)), _quadruple(0)) == ((3, 3), (1,), (1, 2, 3), (0, 0, 0, 0))
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    assert _list_with_default([None, 4], [1, 2, 8, 9]) == [8, 4] and _list_with_default(5, [1]) == 5
    with pytest.raises(ValueError, match="Input dimension should be at least 4"):
        _list_with_default([None, 4, 5], [1, 2, 3])


def test_sdpa_kernel_selects_the_math_path_and_restores_the_flags():
    rng = np.random.default_rng(0)
    q, k, v = (torch.tensor(rng.normal(size=(1, 2, 5, 24)).astype(np.float32)) for _ in range(3))
    with sdpa_kernel(SDPBackend.MATH):
        assert not torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.backends.cuda.flash_sdp_enabled()
    s = q @ k.transpose(-2, -1) / 24 ** 0.5 + torch.full((5, 5), float("-inf")).triu(1)
    np.testing.assert_allclose(a.numpy(), (s.softmax(-1) @ v).numpy(), rtol=1e-5, atol=1e-6)
    # PyTorch 2.13's math path (printed): a[0, 1, 3, :4], a.sum()
    np.testing.assert_allclose(a[0, 1, 3, :4].tolist(), [-0.5453879237174988, -1.3740355968475342,
                                                        -0.2522933781147003, -0.41621309518814087], rtol=2e-6)
    assert a.sum().item() == pytest.approx(-14.789163589477539, rel=1e-6)
    with pytest.raises(RuntimeError, match="No viable backend for scaled_dot_product_attention was found"):
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
            F.scaled_dot_product_attention(q, k, v)
    assert torch.backends.cuda.math_sdp_enabled() and torch.backends.cuda.flash_sdp_enabled()
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass
