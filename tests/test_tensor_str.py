"""Tensor printing must match PyTorch byte for byte.

Every expected string below is a literal captured from real PyTorch 2.13
(``repr(torch_tensor)`` for the same values, with ``dtype=torch.`` spelled
``dtype=tgrad.``; device / custom-prefix cases from PyTorch's own
``_tensor_str``/``_add_suffixes``).  This test does not import torch.
"""
import ml_dtypes
import numpy as np
import pytest

from tgrad._tensor_str import format_tensor, get_printoptions, printoptions, set_printoptions

_NP = {"bfloat16": ml_dtypes.bfloat16, "bool": np.bool_}
_GRAD = {"req": ["requires_grad=True"], "fn": ["grad_fn=<AddBackward0>"]}


@pytest.fixture(autouse=True)
def _reset_printoptions():
    set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")


def _make(values, dtype_name):
    arr = np.asarray(values)
    if dtype_name in ("float16", "bfloat16"):
        arr = arr.astype(np.float32)
    return arr.astype(_NP.get(dtype_name) or getattr(np, dtype_name))


# (id, values, dtype name, options, expected PyTorch repr)
# options: grad ("req" -> requires_grad=True, "fn" -> grad_fn=<AddBackward0>), device,
#          default (default float dtype), prefix, opts (set_printoptions kwargs)
CASES = [
    pytest.param(
        lambda: np.array(9.0),
        'float32', {'grad': 'fn'},
        'tensor(9., grad_fn=<AddBackward0>)',
        id='scalar_grad_fn',
    ),
    pytest.param(
        lambda: np.array(12.0),
        'float32', {},
        'tensor(12.)',
        id='scalar_12',
    ),
    pytest.param(
        lambda: np.ones((1, 2)),
        'float32', {'grad': 'req'},
        'tensor([[1., 1.]], requires_grad=True)',
        id='ones_requires_grad',
    ),
    pytest.param(
        lambda: np.array([2.0, 0.4, 0.006]),
        'float32', {},
        'tensor([2.0000, 0.4000, 0.0060])',
        id='vec_mixed_precision',
    ),
    pytest.param(
        lambda: np.array([[2., 6., 12.], [20., 30., 42.]]),
        'float32', {'grad': 'fn'},
        (
            'tensor([[ 2.,  6., 12.],\n'
            '        [20., 30., 42.]], grad_fn=<AddBackward0>)'
        ),
        id='mat_int_mode_grad_fn',
    ),
    pytest.param(
        lambda: np.array([[5., 8.], [11., 14.]]),
        'float32', {},
        (
            'tensor([[ 5.,  8.],\n'
            '        [11., 14.]])'
        ),
        id='mat_2x2',
    ),
    pytest.param(
        lambda: np.full((1, 10), 32.0),
        'float32', {'grad': 'fn'},
        (
            'tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]],\n'
            '       grad_fn=<AddBackward0>)'
        ),
        id='row_suffix_wraps',
    ),
    pytest.param(
        lambda: np.random.default_rng(0).standard_normal((4, 4)),
        'float32', {},
        (
            'tensor([[ 0.1257, -0.1321,  0.6404,  0.1049],\n'
            '        [-0.5357,  0.3616,  1.3040,  0.9471],\n'
            '        [-0.7037, -1.2654, -0.6233,  0.0413],\n'
            '        [-2.3250, -0.2188, -1.2459, -0.7323]])'
        ),
        id='randn_4x4',
    ),
    pytest.param(
        lambda: np.random.default_rng(1).standard_normal((4, 4)),
        'float32', {'grad': 'req'},
        (
            'tensor([[ 0.3456,  0.8216,  0.3304, -1.3032],\n'
            '        [ 0.9054,  0.4464, -0.5370,  0.5811],\n'
            '        [ 0.3646,  0.2941,  0.0284,  0.5467],\n'
            '        [-0.7365, -0.1629, -0.4821,  0.5988]], requires_grad=True)'
        ),
        id='randn_4x4_req',
    ),
    pytest.param(
        lambda: np.random.default_rng(2).uniform(-0.05, 0.05, (8, 8)) * np.where(np.arange(64).reshape(8, 8) % 9 == 0, 1e-3, 1.0) + np.where(np.arange(64).reshape(8, 8) == 5, 0.015022 - np.random.default_rng(2).uniform(-0.05, 0.05, (8, 8))[0, 5], 0.0),
        'float32', {},
        (
            'tensor([[-2.3839e-05, -2.0151e-02,  3.1423e-02, -4.0808e-02,  1.0010e-02,\n'
            '          1.5022e-02, -3.1210e-02, -4.4485e-02],\n'
            '        [-2.2503e-02,  1.5743e-05,  6.2266e-03, -3.4994e-02, -6.7369e-03,\n'
            '          1.6930e-02, -7.7215e-03,  1.3318e-02],\n'
            '        [ 4.6744e-02,  1.8306e-02, -1.0838e-05, -3.1275e-02, -1.5404e-02,\n'
            '          1.1066e-03,  3.9121e-02,  2.7556e-02],\n'
            '        [-1.8185e-02,  4.2422e-02, -2.9090e-03,  1.9376e-05, -3.9279e-02,\n'
            '         -3.9546e-02, -2.9809e-02,  3.8445e-02],\n'
            '        [ 1.7981e-02,  3.4924e-02,  1.4444e-02, -9.3458e-03,  1.6578e-06,\n'
            '          9.3444e-03,  3.6212e-02, -6.1814e-03],\n'
            '        [ 3.9224e-02,  1.1372e-02,  3.2936e-02, -1.9439e-04,  1.9252e-02,\n'
            '         -1.6097e-05,  2.2829e-03, -2.8378e-02],\n'
            '        [-3.9930e-02, -4.6140e-02,  2.0195e-02, -4.3569e-03,  3.9773e-02,\n'
            '          3.3518e-02, -1.1490e-05,  4.7368e-02],\n'
            '        [ 9.2062e-03,  2.6588e-02, -9.2806e-03, -3.0383e-02, -3.2822e-02,\n'
            '         -3.1879e-02,  1.0381e-02, -3.8737e-05]])'
        ),
        id='sci_8x8',
    ),
    pytest.param(
        lambda: np.random.default_rng(3).standard_normal((8, 8)) * 0.01,
        'float32', {'grad': 'fn'},
        (
            'tensor([[ 0.0204, -0.0256,  0.0042, -0.0057, -0.0045, -0.0022, -0.0202, -0.0023],\n'
            '        [-0.0087,  0.0332,  0.0023, -0.0035, -0.0028, -0.0067, -0.0106, -0.0039],\n'
            '        [ 0.0048, -0.0024,  0.0096, -0.0020,  0.0002,  0.0155,  0.0055, -0.0051],\n'
            '        [-0.0018,  0.0054,  0.0194, -0.0027, -0.0024,  0.0100, -0.0089, -0.0029],\n'
            '        [ 0.0088,  0.0058,  0.0009,  0.0067, -0.0283,  0.0102, -0.0096, -0.0167],\n'
            '        [ 0.0028,  0.0070, -0.0044, -0.0108,  0.0003, -0.0005,  0.0141,  0.0075],\n'
            '        [ 0.0019,  0.0111, -0.0021, -0.0093,  0.0058,  0.0058, -0.0021, -0.0078],\n'
            '        [ 0.0023, -0.0249,  0.0069,  0.0049, -0.0164,  0.0006, -0.0096,  0.0076]],\n'
            '       grad_fn=<AddBackward0>)'
        ),
        id='sci_8x8_grad_fn',
    ),
    pytest.param(
        lambda: np.arange(30) * 1.5,
        'float32', {},
        (
            'tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n'
            '        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n'
            '        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n'
            '        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000])'
        ),
        id='long_row_float_wraps',
    ),
    pytest.param(
        lambda: np.arange(100),
        'int64', {},
        (
            'tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n'
            '        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n'
            '        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n'
            '        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n'
            '        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n'
            '        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])'
        ),
        id='long_row_int_wraps',
    ),
    pytest.param(
        lambda: np.random.default_rng(4).standard_normal(25),
        'float32', {},
        (
            'tensor([-0.6518, -0.1747,  1.6637,  0.6591, -1.6414, -0.0052, -0.6235,  0.1486,\n'
            '        -1.6082,  0.2418,  0.2354,  1.5756,  0.3166,  0.5105, -1.4931,  2.2527,\n'
            '        -1.9156,  1.1018, -0.3299, -0.8806, -0.6563, -0.6720,  0.3802, -0.1101,\n'
            '         1.4826])'
        ),
        id='long_row_decimals_wraps',
    ),
    pytest.param(
        lambda: np.random.default_rng(5).standard_normal((3, 20)),
        'float32', {},
        (
            'tensor([[-0.8019, -1.3244, -0.2484,  0.4204,  1.1360,  0.1097, -0.5526, -0.7848,\n'
            '          0.7487,  1.6348,  0.2728, -1.2333, -0.9583,  1.6000,  0.2029, -1.7321,\n'
            '         -0.0837, -1.1632, -0.6293, -0.4880],\n'
            '        [-0.7133,  0.5534, -0.0631, -0.5894,  0.4096,  0.8299, -1.6430, -0.2567,\n'
            '         -0.9807, -0.1732, -1.2894,  0.0207, -0.0379, -0.3043, -1.0479, -0.3962,\n'
            '         -1.0913, -1.3552,  0.2248, -1.1093],\n'
            '        [ 1.1703,  0.7166, -1.9978,  0.2721, -1.1017,  0.0331,  0.0436, -1.9884,\n'
            '         -0.2334, -0.2558,  0.9620, -1.1814,  0.7380, -1.0990, -0.3313, -0.8405,\n'
            '          1.4487,  0.5682,  2.4317,  0.6419]])'
        ),
        id='matrix_rows_wrap',
    ),
    pytest.param(
        lambda: np.arange(2000) / 7,
        'float32', {},
        (
            'tensor([0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 2.8529e+02, 2.8543e+02,\n'
            '        2.8557e+02])'
        ),
        id='summarize_1d_2000',
    ),
    pytest.param(
        lambda: np.arange(2000),
        'int64', {},
        'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])',
        id='summarize_1d_2000_int',
    ),
    pytest.param(
        lambda: np.arange(2000).reshape(40, 50) * 0.25,
        'float32', {},
        (
            'tensor([[0.0000e+00, 2.5000e-01, 5.0000e-01,  ..., 1.1750e+01, 1.2000e+01,\n'
            '         1.2250e+01],\n'
            '        [1.2500e+01, 1.2750e+01, 1.3000e+01,  ..., 2.4250e+01, 2.4500e+01,\n'
            '         2.4750e+01],\n'
            '        [2.5000e+01, 2.5250e+01, 2.5500e+01,  ..., 3.6750e+01, 3.7000e+01,\n'
            '         3.7250e+01],\n'
            '        ...,\n'
            '        [4.6250e+02, 4.6275e+02, 4.6300e+02,  ..., 4.7425e+02, 4.7450e+02,\n'
            '         4.7475e+02],\n'
            '        [4.7500e+02, 4.7525e+02, 4.7550e+02,  ..., 4.8675e+02, 4.8700e+02,\n'
            '         4.8725e+02],\n'
            '        [4.8750e+02, 4.8775e+02, 4.8800e+02,  ..., 4.9925e+02, 4.9950e+02,\n'
            '         4.9975e+02]])'
        ),
        id='summarize_2d',
    ),
    pytest.param(
        lambda: np.arange(3000).reshape(10, 10, 30),
        'int32', {},
        (
            'tensor([[[   0,    1,    2,  ...,   27,   28,   29],\n'
            '         [  30,   31,   32,  ...,   57,   58,   59],\n'
            '         [  60,   61,   62,  ...,   87,   88,   89],\n'
            '         ...,\n'
            '         [ 210,  211,  212,  ...,  237,  238,  239],\n'
            '         [ 240,  241,  242,  ...,  267,  268,  269],\n'
            '         [ 270,  271,  272,  ...,  297,  298,  299]],\n'
            '\n'
            '        [[ 300,  301,  302,  ...,  327,  328,  329],\n'
            '         [ 330,  331,  332,  ...,  357,  358,  359],\n'
            '         [ 360,  361,  362,  ...,  387,  388,  389],\n'
            '         ...,\n'
            '         [ 510,  511,  512,  ...,  537,  538,  539],\n'
            '         [ 540,  541,  542,  ...,  567,  568,  569],\n'
            '         [ 570,  571,  572,  ...,  597,  598,  599]],\n'
            '\n'
            '        [[ 600,  601,  602,  ...,  627,  628,  629],\n'
            '         [ 630,  631,  632,  ...,  657,  658,  659],\n'
            '         [ 660,  661,  662,  ...,  687,  688,  689],\n'
            '         ...,\n'
            '         [ 810,  811,  812,  ...,  837,  838,  839],\n'
            '         [ 840,  841,  842,  ...,  867,  868,  869],\n'
            '         [ 870,  871,  872,  ...,  897,  898,  899]],\n'
            '\n'
            '        ...,\n'
            '\n'
            '        [[2100, 2101, 2102,  ..., 2127, 2128, 2129],\n'
            '         [2130, 2131, 2132,  ..., 2157, 2158, 2159],\n'
            '         [2160, 2161, 2162,  ..., 2187, 2188, 2189],\n'
            '         ...,\n'
            '         [2310, 2311, 2312,  ..., 2337, 2338, 2339],\n'
            '         [2340, 2341, 2342,  ..., 2367, 2368, 2369],\n'
            '         [2370, 2371, 2372,  ..., 2397, 2398, 2399]],\n'
            '\n'
            '        [[2400, 2401, 2402,  ..., 2427, 2428, 2429],\n'
            '         [2430, 2431, 2432,  ..., 2457, 2458, 2459],\n'
            '         [2460, 2461, 2462,  ..., 2487, 2488, 2489],\n'
            '         ...,\n'
            '         [2610, 2611, 2612,  ..., 2637, 2638, 2639],\n'
            '         [2640, 2641, 2642,  ..., 2667, 2668, 2669],\n'
            '         [2670, 2671, 2672,  ..., 2697, 2698, 2699]],\n'
            '\n'
            '        [[2700, 2701, 2702,  ..., 2727, 2728, 2729],\n'
            '         [2730, 2731, 2732,  ..., 2757, 2758, 2759],\n'
            '         [2760, 2761, 2762,  ..., 2787, 2788, 2789],\n'
            '         ...,\n'
            '         [2910, 2911, 2912,  ..., 2937, 2938, 2939],\n'
            '         [2940, 2941, 2942,  ..., 2967, 2968, 2969],\n'
            '         [2970, 2971, 2972,  ..., 2997, 2998, 2999]]], dtype=tgrad.int32)'
        ),
        id='summarize_3d',
    ),
    pytest.param(
        lambda: np.random.default_rng(6).standard_normal((100, 100)),
        'float32', {'grad': 'req'},
        (
            'tensor([[ 1.0531,  1.7765, -2.5533,  ...,  0.1548, -0.3218,  0.4405],\n'
            '        [ 0.4956,  0.3181, -0.2545,  ..., -1.0896, -0.0690,  0.1042],\n'
            '        [-1.3807,  0.5186, -0.6232,  ...,  0.9171,  0.1805, -1.6437],\n'
            '        ...,\n'
            '        [-1.6255, -0.0238,  1.2774,  ...,  0.1152, -0.6762, -1.5490],\n'
            '        [ 1.1673,  0.4769, -1.5654,  ..., -0.2993,  0.7549,  1.8441],\n'
            '        [-0.2693, -1.5403, -0.7293,  ...,  0.3940, -0.2570, -0.5476]],\n'
            '       requires_grad=True)'
        ),
        id='summarize_2d_randn_grad',
    ),
    pytest.param(
        lambda: np.arange(24).reshape(2, 3, 4),
        'float32', {},
        (
            'tensor([[[ 0.,  1.,  2.,  3.],\n'
            '         [ 4.,  5.,  6.,  7.],\n'
            '         [ 8.,  9., 10., 11.]],\n'
            '\n'
            '        [[12., 13., 14., 15.],\n'
            '         [16., 17., 18., 19.],\n'
            '         [20., 21., 22., 23.]]])'
        ),
        id='tensor_3d',
    ),
    pytest.param(
        lambda: np.arange(48).reshape(2, 2, 3, 4) * 0.5 - 3,
        'float32', {},
        (
            'tensor([[[[-3.0000, -2.5000, -2.0000, -1.5000],\n'
            '          [-1.0000, -0.5000,  0.0000,  0.5000],\n'
            '          [ 1.0000,  1.5000,  2.0000,  2.5000]],\n'
            '\n'
            '         [[ 3.0000,  3.5000,  4.0000,  4.5000],\n'
            '          [ 5.0000,  5.5000,  6.0000,  6.5000],\n'
            '          [ 7.0000,  7.5000,  8.0000,  8.5000]]],\n'
            '\n'
            '\n'
            '        [[[ 9.0000,  9.5000, 10.0000, 10.5000],\n'
            '          [11.0000, 11.5000, 12.0000, 12.5000],\n'
            '          [13.0000, 13.5000, 14.0000, 14.5000]],\n'
            '\n'
            '         [[15.0000, 15.5000, 16.0000, 16.5000],\n'
            '          [17.0000, 17.5000, 18.0000, 18.5000],\n'
            '          [19.0000, 19.5000, 20.0000, 20.5000]]]])'
        ),
        id='tensor_4d',
    ),
    pytest.param(
        lambda: np.arange(36).reshape(3, 1, 3, 4) - 10,
        'int64', {},
        (
            'tensor([[[[-10,  -9,  -8,  -7],\n'
            '          [ -6,  -5,  -4,  -3],\n'
            '          [ -2,  -1,   0,   1]]],\n'
            '\n'
            '\n'
            '        [[[  2,   3,   4,   5],\n'
            '          [  6,   7,   8,   9],\n'
            '          [ 10,  11,  12,  13]]],\n'
            '\n'
            '\n'
            '        [[[ 14,  15,  16,  17],\n'
            '          [ 18,  19,  20,  21],\n'
            '          [ 22,  23,  24,  25]]]])'
        ),
        id='tensor_4d_int',
    ),
    pytest.param(
        lambda: np.array([1, -2, 300]),
        'int64', {},
        'tensor([  1,  -2, 300])',
        id='int64_vec',
    ),
    pytest.param(
        lambda: np.array([1, -2, 300]),
        'int32', {},
        'tensor([  1,  -2, 300], dtype=tgrad.int32)',
        id='int32_vec',
    ),
    pytest.param(
        lambda: np.arange(6).reshape(2, 3),
        'int32', {},
        (
            'tensor([[0, 1, 2],\n'
            '        [3, 4, 5]], dtype=tgrad.int32)'
        ),
        id='int32_matrix',
    ),
    pytest.param(
        lambda: np.array([7, -32768]),
        'int16', {},
        'tensor([     7, -32768], dtype=tgrad.int16)',
        id='int16_vec',
    ),
    pytest.param(
        lambda: np.array([-128, 5, 127]),
        'int8', {},
        'tensor([-128,    5,  127], dtype=tgrad.int8)',
        id='int8_vec',
    ),
    pytest.param(
        lambda: np.array([0, 17, 255]),
        'uint8', {},
        'tensor([  0,  17, 255], dtype=tgrad.uint8)',
        id='uint8_vec',
    ),
    pytest.param(
        lambda: np.array([True, False, True]),
        'bool', {},
        'tensor([ True, False,  True])',
        id='bool_vec',
    ),
    pytest.param(
        lambda: np.array([[True, False], [False, False]]),
        'bool', {},
        (
            'tensor([[ True, False],\n'
            '        [False, False]])'
        ),
        id='bool_matrix',
    ),
    pytest.param(
        lambda: np.array(False),
        'bool', {},
        'tensor(False)',
        id='bool_scalar',
    ),
    pytest.param(
        lambda: np.array(-42),
        'int64', {},
        'tensor(-42)',
        id='int_scalar',
    ),
    pytest.param(
        lambda: np.array(7),
        'int32', {},
        'tensor(7, dtype=tgrad.int32)',
        id='int32_scalar',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.5, -3.25]),
        'float64', {},
        'tensor([ 1.0000,  2.5000, -3.2500], dtype=tgrad.float64)',
        id='float64_vec',
    ),
    pytest.param(
        lambda: np.array(1.5),
        'float64', {},
        'tensor(1.5000, dtype=tgrad.float64)',
        id='float64_scalar',
    ),
    pytest.param(
        lambda: np.array([[1.0, 2.0], [3.0, 4.0]]),
        'float64', {'grad': 'req'},
        (
            'tensor([[1., 2.],\n'
            '        [3., 4.]], dtype=tgrad.float64, requires_grad=True)'
        ),
        id='float64_int_mode_req',
    ),
    pytest.param(
        lambda: np.arange(10) * 1000.5,
        'float64', {'grad': 'fn'},
        (
            'tensor([   0.0000, 1000.5000, 2001.0000, 3001.5000, 4002.0000, 5002.5000,\n'
            '        6003.0000, 7003.5000, 8004.0000, 9004.5000], dtype=tgrad.float64,\n'
            '       grad_fn=<AddBackward0>)'
        ),
        id='float64_suffixes_wrap',
    ),
    pytest.param(
        lambda: np.array([0.1, 1.5, -2.0, 65504.0]),
        'float16', {},
        (
            'tensor([ 9.9976e-02,  1.5000e+00, -2.0000e+00,  6.5504e+04],\n'
            '       dtype=tgrad.float16)'
        ),
        id='float16_vec',
    ),
    pytest.param(
        lambda: np.array([0.1, 0.2, 0.3333]),
        'float16', {},
        'tensor([0.1000, 0.2000, 0.3333], dtype=tgrad.float16)',
        id='float16_decimals',
    ),
    pytest.param(
        lambda: np.array([0.1, 1.5, 3.14159]),
        'bfloat16', {},
        'tensor([0.1001, 1.5000, 3.1406], dtype=tgrad.bfloat16)',
        id='bfloat16_vec',
    ),
    pytest.param(
        lambda: np.random.default_rng(7).standard_normal((3, 3)),
        'bfloat16', {},
        (
            'tensor([[ 1.2283e-03,  2.9883e-01, -2.7344e-01],\n'
            '        [-8.9062e-01, -4.5508e-01, -9.9219e-01],\n'
            '        [ 6.0059e-02,  1.3438e+00, -4.9219e-01]], dtype=tgrad.bfloat16)'
        ),
        id='bfloat16_matrix',
    ),
    pytest.param(
        lambda: np.array([np.nan, np.inf, -np.inf, 1.0]),
        'float32', {},
        'tensor([nan, inf, -inf, 1.])',
        id='nan_inf_int_mode',
    ),
    pytest.param(
        lambda: np.array([np.nan, 1.5, -np.inf, 0.25]),
        'float32', {},
        'tensor([   nan, 1.5000,   -inf, 0.2500])',
        id='nan_inf_decimals',
    ),
    pytest.param(
        lambda: np.array([np.nan, np.nan]),
        'float32', {},
        'tensor([nan, nan])',
        id='all_nan',
    ),
    pytest.param(
        lambda: np.array([0.0, np.nan, np.inf]),
        'float32', {},
        'tensor([0., nan, inf])',
        id='nan_and_zero',
    ),
    pytest.param(
        lambda: np.array([np.nan, 1e-6, 3.0, -np.inf]),
        'float32', {},
        'tensor([       nan, 1.0000e-06, 3.0000e+00,       -inf])',
        id='nan_sci',
    ),
    pytest.param(
        lambda: np.array(np.nan),
        'float32', {},
        'tensor(nan)',
        id='nan_scalar',
    ),
    pytest.param(
        lambda: np.array(-np.inf),
        'float32', {},
        'tensor(-inf)',
        id='inf_scalar',
    ),
    pytest.param(
        lambda: np.array([-0.0, 0.0, 1.0]),
        'float32', {},
        'tensor([-0., 0., 1.])',
        id='negative_zero',
    ),
    pytest.param(
        lambda: np.array([-0.0, 1.5]),
        'float32', {},
        'tensor([-0.0000, 1.5000])',
        id='negative_zero_decimals',
    ),
    pytest.param(
        lambda: np.array(-0.0),
        'float32', {},
        'tensor(-0.)',
        id='negative_zero_scalar',
    ),
    pytest.param(
        lambda: np.zeros((2, 3)),
        'float32', {},
        (
            'tensor([[0., 0., 0.],\n'
            '        [0., 0., 0.]])'
        ),
        id='zeros',
    ),
    pytest.param(
        lambda: np.array([1e10, 1.0]),
        'float32', {},
        'tensor([1.0000e+10, 1.0000e+00])',
        id='large_values',
    ),
    pytest.param(
        lambda: np.array([1e9, 2e9, -3e9]),
        'float32', {},
        'tensor([ 1.0000e+09,  2.0000e+09, -3.0000e+09])',
        id='large_int_mode_sci',
    ),
    pytest.param(
        lambda: np.array([1e-5, 1.0]),
        'float32', {},
        'tensor([1.0000e-05, 1.0000e+00])',
        id='small_values',
    ),
    pytest.param(
        lambda: np.array(1e-8),
        'float32', {},
        'tensor(1.0000e-08)',
        id='tiny_scalar',
    ),
    pytest.param(
        lambda: np.array([1e20, -1e300, 2.0]),
        'float64', {},
        'tensor([  1.0000e+20, -1.0000e+300,   2.0000e+00], dtype=tgrad.float64)',
        id='huge_float64',
    ),
    pytest.param(
        lambda: np.array([1000.5, 0.5]),
        'float32', {},
        'tensor([1.0005e+03, 5.0000e-01])',
        id='ratio_over_1000',
    ),
    pytest.param(
        lambda: np.array([1e8, 1e8 + 8]),
        'float32', {},
        'tensor([1.0000e+08, 1.0000e+08])',
        id='boundary_1e8',
    ),
    pytest.param(
        lambda: np.zeros((0,)),
        'float32', {},
        'tensor([])',
        id='empty_1d',
    ),
    pytest.param(
        lambda: np.zeros((0, 3)),
        'float32', {},
        'tensor([], size=(0, 3))',
        id='empty_0x3',
    ),
    pytest.param(
        lambda: np.zeros((0,)),
        'int64', {},
        'tensor([], dtype=tgrad.int64)',
        id='empty_int64',
    ),
    pytest.param(
        lambda: np.zeros((2, 0, 3)),
        'float64', {},
        'tensor([], size=(2, 0, 3), dtype=tgrad.float64)',
        id='empty_2x0x3_float64',
    ),
    pytest.param(
        lambda: np.zeros((3, 0)),
        'bool', {},
        'tensor([], size=(3, 0), dtype=tgrad.bool)',
        id='empty_bool',
    ),
    pytest.param(
        lambda: np.zeros((0,)),
        'float32', {'grad': 'req'},
        'tensor([], requires_grad=True)',
        id='empty_req',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.0]),
        'float32', {'device': 'cuda:0'},
        "tensor([1., 2.], device='cuda:0')",
        id='device_cuda',
    ),
    pytest.param(
        lambda: np.array([[1.5, 2.0], [3.0, 4.0]]),
        'float64', {'device': 'cuda:1', 'grad': 'req'},
        (
            'tensor([[1.5000, 2.0000],\n'
            "        [3.0000, 4.0000]], device='cuda:1', dtype=tgrad.float64,\n"
            '       requires_grad=True)'
        ),
        id='device_cuda_float64_req',
    ),
    pytest.param(
        lambda: np.arange(12) + 0.5,
        'float32', {'device': 'cuda:0', 'grad': 'fn'},
        (
            'tensor([ 0.5000,  1.5000,  2.5000,  3.5000,  4.5000,  5.5000,  6.5000,  7.5000,\n'
            "         8.5000,  9.5000, 10.5000, 11.5000], device='cuda:0',\n"
            '       grad_fn=<AddBackward0>)'
        ),
        id='device_long_row',
    ),
    pytest.param(
        lambda: np.arange(20) * 1.25,
        'float32', {'opts': {'linewidth': 40}},
        (
            'tensor([ 0.0000,  1.2500,  2.5000,\n'
            '         3.7500,  5.0000,  6.2500,\n'
            '         7.5000,  8.7500, 10.0000,\n'
            '        11.2500, 12.5000, 13.7500,\n'
            '        15.0000, 16.2500, 17.5000,\n'
            '        18.7500, 20.0000, 21.2500,\n'
            '        22.5000, 23.7500])'
        ),
        id='opt_linewidth_40',
    ),
    pytest.param(
        lambda: np.arange(8) * 1.0,
        'float32', {'opts': {'linewidth': 40}, 'grad': 'fn'},
        (
            'tensor([0., 1., 2., 3., 4., 5., 6., 7.],\n'
            '       grad_fn=<AddBackward0>)'
        ),
        id='opt_linewidth_40_suffix',
    ),
    pytest.param(
        lambda: np.array([3.14159, 2.71828, -1.41421]),
        'float32', {'opts': {'precision': 2}},
        'tensor([ 3.14,  2.72, -1.41])',
        id='opt_precision_2',
    ),
    pytest.param(
        lambda: np.array([3.14159, 2.71828, -1.41421]),
        'float64', {'opts': {'precision': 8}},
        'tensor([ 3.14159000,  2.71828000, -1.41421000], dtype=tgrad.float64)',
        id='opt_precision_8',
    ),
    pytest.param(
        lambda: np.array([1e-6, 123.0]),
        'float32', {'opts': {'precision': 2}},
        'tensor([1.00e-06, 1.23e+02])',
        id='opt_precision_2_sci',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.5]),
        'float32', {'opts': {'sci_mode': True}},
        'tensor([1.0000e+00, 2.5000e+00])',
        id='opt_sci_true',
    ),
    pytest.param(
        lambda: np.array([[1.0, 20.0], [300.0, 0.0]]),
        'float32', {'opts': {'sci_mode': True}},
        (
            'tensor([[1.0000e+00, 2.0000e+01],\n'
            '        [3.0000e+02, 0.0000e+00]])'
        ),
        id='opt_sci_true_int',
    ),
    pytest.param(
        lambda: np.array([1e-6, 12345.678]),
        'float32', {'opts': {'sci_mode': False}},
        'tensor([    0.0000, 12345.6777])',
        id='opt_sci_false',
    ),
    pytest.param(
        lambda: np.arange(10),
        'int64', {'opts': {'threshold': 5}},
        'tensor([0, 1, 2,  ..., 7, 8, 9])',
        id='opt_threshold_5',
    ),
    pytest.param(
        lambda: np.arange(200).reshape(10, 20) * 0.5,
        'float32', {'opts': {'threshold': 10, 'edgeitems': 1}},
        (
            'tensor([[ 0.0000,  ...,  9.5000],\n'
            '        ...,\n'
            '        [90.0000,  ..., 99.5000]])'
        ),
        id='opt_edgeitems_1',
    ),
    pytest.param(
        lambda: np.arange(20).reshape(4, 5),
        'float32', {'opts': {'threshold': 5, 'edgeitems': 0}},
        'tensor([...], size=(4, 5))',
        id='opt_edgeitems_0',
    ),
    pytest.param(
        lambda: np.arange(20) * 1.5,
        'float32', {'opts': {'threshold': 5, 'edgeitems': 0}},
        'tensor([...], size=(20,))',
        id='opt_edgeitems_0_1d',
    ),
    pytest.param(
        lambda: np.random.default_rng(8).standard_normal((50, 30)),
        'float32', {'opts': {'profile': 'short'}},
        (
            'tensor([[-1.74, -1.34,  ..., -1.82,  1.55],\n'
            '        [-0.86, -2.24,  ...,  0.79, -0.11],\n'
            '        ...,\n'
            '        [-2.80,  0.40,  ...,  0.54, -0.87],\n'
            '        [ 0.75, -1.43,  ...,  0.80,  0.91]])'
        ),
        id='opt_profile_short',
    ),
    pytest.param(
        lambda: np.arange(1100) % 7,
        'int64', {'opts': {'profile': 'full'}},
        (
            'tensor([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4,\n'
            '        5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0,\n'
            '        1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3,\n'
            '        4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6,\n'
            '        0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4,\n'
            '        5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0,\n'
            '        1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3,\n'
            '        4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6,\n'
            '        0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4,\n'
            '        5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0,\n'
            '        1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3,\n'
            '        4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6,\n'
            '        0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4,\n'
            '        5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0,\n'
            '        1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3,\n'
            '        4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6,\n'
            '        0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4,\n'
            '        5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0,\n'
            '        1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3,\n'
            '        4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6,\n'
            '        0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4,\n'
            '        5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0,\n'
            '        1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3,\n'
            '        4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6,\n'
            '        0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2,\n'
            '        3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5,\n'
            '        6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1,\n'
            '        2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6, 0])'
        ),
        id='opt_profile_full',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.5]),
        'float32', {'default': 'float64'},
        'tensor([1.0000, 2.5000], dtype=tgrad.float32)',
        id='default_float64_f32',
    ),
    pytest.param(
        lambda: np.array([1.0, 2.5]),
        'float64', {'default': 'float64'},
        'tensor([1.0000, 2.5000])',
        id='default_float64_f64',
    ),
    pytest.param(
        lambda: np.zeros((0,)),
        'float64', {'default': 'float64'},
        'tensor([])',
        id='default_float64_empty_f64',
    ),
    pytest.param(
        lambda: np.arange(5).reshape(5, 1) - 2.5,
        'float32', {},
        (
            'tensor([[-2.5000],\n'
            '        [-1.5000],\n'
            '        [-0.5000],\n'
            '        [ 0.5000],\n'
            '        [ 1.5000]])'
        ),
        id='column_vector',
    ),
    pytest.param(
        lambda: np.array([1 + 2j, -0.5 - 1j, 3j]),
        'complex64', {},
        'tensor([ 1.0000+2.j, -0.5000-1.j,  0.0000+3.j])',
        id='complex64_vec',
    ),
    pytest.param(
        lambda: np.array([[1 + 2j, 0], [1e-5j, -2]]),
        'complex128', {},
        (
            'tensor([[ 1.+2.0000e+00j,  0.+0.0000e+00j],\n'
            '        [ 0.+1.0000e-05j, -2.+0.0000e+00j]], dtype=tgrad.complex128)'
        ),
        id='complex128_matrix',
    ),
    pytest.param(
        lambda: np.arange(6).reshape(2, 3) * 0.5,
        'float32', {'prefix': 'Parameter(', 'grad': 'req'},
        (
            'Parameter([[0.0000, 0.5000, 1.0000],\n'
            '           [1.5000, 2.0000, 2.5000]], requires_grad=True)'
        ),
        id='custom_prefix',
    ),
]


@pytest.mark.parametrize("values, dtype_name, options, expected", CASES)
def test_matches_pytorch(values, dtype_name, options, expected):
    arr = _make(values(), dtype_name)
    set_printoptions(**options.get("opts", {}))
    kwargs = {}
    if "prefix" in options:
        kwargs["prefix"] = options["prefix"]
    got = format_tensor(
        arr,
        dtype_name=dtype_name,
        default_dtype_name=options.get("default", "float32"),
        device_str=options.get("device"),
        suffixes=_GRAD.get(options.get("grad"), []),
        **kwargs,
    )
    assert got == expected


def test_default_printoptions():
    assert get_printoptions() == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)


def test_profiles():
    set_printoptions(profile="short")
    assert get_printoptions() == dict(precision=2, threshold=1000, edgeitems=2, linewidth=80, sci_mode=None)
    set_printoptions(profile="full")
    assert get_printoptions() == dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80,
                                      sci_mode=None)
    set_printoptions(profile="default", precision=6)
    assert get_printoptions()["precision"] == 6


def test_sci_mode_reset_like_pytorch():
    # PyTorch assigns sci_mode on every call, so omitting it resets it to None.
    set_printoptions(sci_mode=True)
    assert get_printoptions()["sci_mode"] is True
    set_printoptions(precision=3)
    assert get_printoptions()["sci_mode"] is None


def test_printoptions_context_manager_restores():
    with printoptions(precision=2, linewidth=40):
        assert format_tensor(np.array([1.2345], np.float32), dtype_name="float32") == "tensor([1.23])"
    assert get_printoptions()["precision"] == 4
    assert get_printoptions()["linewidth"] == 80
    assert format_tensor(np.array([1.2345], np.float32), dtype_name="float32") == "tensor([1.2345])"


def test_dtype_name_inferred_from_array():
    assert format_tensor(np.array([1, 2], np.int32)) == "tensor([1, 2], dtype=tgrad.int32)"
    assert format_tensor(np.array([1.5], ml_dtypes.bfloat16)) == "tensor([1.5000], dtype=tgrad.bfloat16)"
    assert format_tensor(np.array([1.5], np.float32)) == "tensor([1.5000])"
    assert format_tensor(np.array(True)) == "tensor(True)"


def test_suffix_order_device_dtype_then_given():
    got = format_tensor(np.array([1.0], np.float64), dtype_name="float64", device_str="cuda:0",
                        suffixes=["requires_grad=True"])
    assert got == "tensor([1.], device='cuda:0', dtype=tgrad.float64, requires_grad=True)"
