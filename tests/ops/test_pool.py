"""Pooling: PyTorch's numbers (hard-coded from PyTorch 2.13), indices, NaN, errors, modules."""
import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import nn


def arr(*s, k=1.0, device="cpu"):
    return tgrad.tensor(np.sin(np.arange(int(np.prod(s))) * k).reshape(s).astype(np.float32), device=device)


def close(t, ref, atol=1e-6):
    np.testing.assert_allclose(t.detach().cpu().numpy(), np.asarray(ref, np.float32), atol=atol, rtol=1e-6)


def test_max_pool2d_ceil_mode_indices_match_pytorch(device):
    y, i = F.max_pool2d(arr(1, 2, 5, 6, k=1.3, device=device), 3, stride=2, padding=1, ceil_mode=True,
                        return_indices=True)
    close(y, [[[[0.9985433220863342, 0.9635581970214844, 0.9867719411849976, 0.9867719411849976],
                [0.9985433220863342, 0.8273279070854187, 0.9867719411849976, 0.9867719411849976],
                [0.8838704228401184, 0.8838704228401184, 0.8273279070854187, 0.0008881568210199475]],
               [[0.9637953639030457, 0.5147401094436646, 0.998590886592865, 0.998590886592865],
                [0.7631326913833618, 0.928465723991394, 0.9866275787353516, 0.1068706214427948],
                [0.8842855095863342, 0.82682865858078, 0.9640318155288696, 0.9640318155288696]]]])
    assert i.dtype == tgrad.int64
    np.testing.assert_array_equal(i.cpu().numpy(), [[[[6, 1, 11, 11], [6, 21, 11, 11], [25, 25, 21, 29]],
                                                     [[0, 1, 5, 5], [19, 15, 10, 11], [24, 20, 29, 29]]]])


def test_max_pool_gradient_goes_to_the_argmax(device):
    x = arr(1, 1, 4, 4, k=0.7, device=device).requires_grad_()
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert type(y.grad_fn).__name__ == "MaxPool2DWithIndicesBackward0"
    y.sum().backward()
    g = np.zeros(16, np.float32)
    g[i.flatten().cpu().numpy()] = 1
    np.testing.assert_array_equal(x.grad.cpu().numpy().ravel(), g)


def test_max_pool_nan_wins_as_in_pytorch(device):
    x = arr(1, 2, 5, 6, k=1.3, device=device)
    x[0, 0, 0, 1] = float("nan")
    close(F.max_pool2d(x, 2), [[[[np.nan, 0.5155013799667358, 0.9867719411849976],
                                 [0.10775364935398102, 0.8273279070854187, 0.9287952184677124]],
                                [[0.9637953639030457, 0.4209728240966797, 0.998590886592865],
                                 [0.7631326913833618, 0.928465723991394, -0.10951945185661316]]]])


def test_avg_pool2d_matches_pytorch(device):
    x = arr(1, 2, 5, 6, k=1.3, device=device)
    close(F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
          [[[[0.5702999830245972, -0.0799030289053917, -0.11852425336837769, 0.6009459495544434],
             [-0.151667520403862, -0.11428925395011902, 0.1755051612854004, -0.04011990502476692],
             [-0.18416465818881989, 0.3708758056163788, -0.32830023765563965, -0.49880343675613403]],
            [[0.24211688339710236, -0.3709113895893097, 0.3076685070991516, 0.5527307391166687],
             [-0.28317782282829285, 0.11455637961626053, -0.020694799721240997, -0.3645242154598236],
             [0.4788348078727722, 0.07925858348608017, -0.2549809515476227, 0.37532344460487366]]]])
    close(F.avg_pool2d(x, (2, 3), stride=(2, 2), padding=(1, 1), divisor_override=3)[0, 1],
          [[0.4928451478481293, -0.35223624110221863, 0.11051332950592041],
           [-0.6812150478363037, -0.07939088344573975, 0.44878634810447693],
           [0.6384463906288147, 0.15851716697216034, -0.5099619030952454]])


def test_adaptive_avg_pool2d_matches_pytorch(device):
    y = F.adaptive_avg_pool2d(arr(1, 2, 5, 6, k=1.3, device=device), (3, 4))
    close(y[0, 0], [[0.5702999830245972, 0.24258287250995636, -0.4782593846321106, 0.18465106189250946],
                    [-0.151667520403862, -0.2832479178905487, 0.2833177447319031, 0.15144379436969757],
                    [-0.18416465818881989, 0.47854727506637573, -0.24304862320423126, -0.5702167749404907]])
    assert F.adaptive_avg_pool2d(arr(2, 3, 5, 6, device=device), (None, 2)).shape == (2, 3, 5, 2)
    assert tgrad.adaptive_avg_pool1d(arr(2, 3, 7, device=device), 3).shape == (2, 3, 3)


def test_unbatched_and_1d(device):
    x = arr(3, 8, 8, device=device)
    np.testing.assert_array_equal(F.max_pool2d(x, 2).cpu().numpy(), F.max_pool2d(x[None], 2)[0].cpu().numpy())
    y, i = F.max_pool1d(arr(2, 9, device=device), 3, return_indices=True)
    assert y.shape == i.shape == (2, 3)
    np.testing.assert_allclose(F.avg_pool1d(arr(1, 1, 6, device=device), 2).cpu().numpy().ravel(),
                               np.sin(np.arange(6)).reshape(3, 2).mean(1), rtol=1e-6)


@pytest.mark.parametrize("call,msg", [
    (lambda x: F.max_pool2d(x, 3, padding=2), "pad should be at most half of effective kernel size, but got pad=2, "
                                              "kernel_size=3 and dilation=1"),
    (lambda x: F.avg_pool2d(x, 3, padding=2), "pad should be at most half of effective kernel size"),
    (lambda x: F.max_pool2d(x[0, 0, 0], 2), r"non-empty 3D or 4D \(batch mode\) tensor expected for input"),
    (lambda x: F.adaptive_avg_pool2d(x[0, 0], 2), r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got "
                                                  r"\[8, 8\]"),
    (lambda x: F.max_pool2d(x, 9), "Output size is too small"),
])
def test_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call(tgrad.zeros(2, 3, 8, 8))


def test_module_reprs():
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(2)) == "AvgPool2d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d((1, 1))) == "AdaptiveAvgPool2d(output_size=(1, 1))"
    assert repr(nn.AdaptiveMaxPool2d(2)) == "AdaptiveMaxPool2d(output_size=2)"
    y, i = nn.MaxPool1d(3, 2, return_indices=True)(arr(1, 2, 9))
    assert y.shape == i.shape == (1, 2, 4)
    x = arr(2, 3, 4, 4)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(x).cpu().numpy().ravel(), x.cpu().numpy().mean((2, 3)).ravel(), rtol=1e-5)
