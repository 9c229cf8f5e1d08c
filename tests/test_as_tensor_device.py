"""``as_tensor`` and the default device: other data goes to it; a tensor moves only to one set_default_device named.

PyTorch 2.13 (checked with ``torch.set_default_device("meta")``, the one other device a CPU build has):
``as_tensor(ndarray)``, ``as_tensor([1, 2])`` and ``as_tensor(3.0)`` land on the default device,
``as_tensor(cpu_tensor)`` is moved there too, ``as_tensor(ndarray, device="cpu")`` shares the array's memory;
with no default device set, ``as_tensor(t) is t``.
"""
import sys

import numpy as np

import tgrad

_D = sys.modules["tgrad.device"]


def test_as_tensor_follows_the_default_device(device):
    saved = _D._global_default[0], _D._set_default[0]
    try:
        tgrad.set_default_device(device)
        a = np.arange(3.0)
        for data in (a, [1, 2], 3.0):
            assert tgrad.as_tensor(data).device.type == device
        np.testing.assert_array_equal(tgrad.as_tensor(a).cpu().numpy(), a)
        shared = tgrad.as_tensor(a, device="cpu")
        a[0] = 5.0
        assert shared[0].item() == 5.0                              # a cpu result still shares numpy's memory
        t = tgrad.ones(2, device="cpu")
        moved = tgrad.as_tensor(t)
        assert moved.device.type == device and (moved is t) == (device == "cpu")
        assert tgrad.as_tensor(t, device="cpu") is t
        tgrad.set_default_device(None)                              # the automatic choice names no device:
        assert tgrad.as_tensor(t) is t                              # a tensor keeps its own
        assert tgrad.as_tensor(a).device == tgrad.get_default_device()
    finally:
        _D._global_default[0], _D._set_default[0] = saved
