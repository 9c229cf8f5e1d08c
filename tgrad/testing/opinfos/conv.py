"""OpInfos for the convolution family: plain and transposed, 1-D and 2-D, stride / padding / dilation / groups."""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)


def conv_ref(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), transposed=False, output_padding=None,
             groups=1):
    """Direct numpy convolution (transposed: the scatter-add adjoint), 1-D via a unit H dim."""
    one = x.ndim == 3
    if one:
        x, w = x[:, :, None], w[:, :, None]
        stride, padding, dilation = (1,) + tuple(stride), (0,) + tuple(padding), (1,) + tuple(dilation)
        output_padding = (0,) + tuple(output_padding or (0,))
    output_padding = tuple(output_padding or (0, 0))
    N, C, H, W = x.shape
    KH, KW = w.shape[2:]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    if not transposed:
        O, CG = w.shape[:2]
        OG = O // groups
        xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
        y = np.zeros((N, O, OH, OW))
        for g in range(groups):
            for kh in range(KH):
                for kw in range(KW):
                    patch = xp[:, g * CG:(g + 1) * CG, kh * dh:kh * dh + sh * (OH - 1) + 1:sh,
                               kw * dw:kw * dw + sw * (OW - 1) + 1:sw]
                    y[:, g * OG:(g + 1) * OG] += np.einsum("nchw,oc->nohw", patch, w[g * OG:(g + 1) * OG, :, kh, kw])
    else:
        CG = C // groups
        OG = w.shape[1]
        full_h, full_w = (H - 1) * sh + dh * (KH - 1) + 1, (W - 1) * sw + dw * (KW - 1) + 1
        OH, OW = full_h - 2 * ph + output_padding[0], full_w - 2 * pw + output_padding[1]
        yf = np.zeros((N, OG * groups, full_h + output_padding[0], full_w + output_padding[1]))
        for g in range(groups):
            for kh in range(KH):
                for kw in range(KW):
                    yf[:, g * OG:(g + 1) * OG, kh * dh:kh * dh + (H - 1) * sh + 1:sh,
                       kw * dw:kw * dw + (W - 1) * sw + 1:sw] += np.einsum(
                        "nchw,co->nohw", x[:, g * CG:(g + 1) * CG], w[g * CG:(g + 1) * CG, :, kh, kw])
        y = yf[:, :, ph:ph + OH, pw:pw + OW]
    if b is not None:
        y = y + b[None, :, None, None]
    return y[:, :, 0] if one else y


def _g(s, p, d, **kw):
    return dict(stride=s, padding=p, dilation=d, **kw)


def _samples(rng):
    n = rng.normal
    return [
        SampleInput(n(size=(1, 3, 4, 4)), n(size=(2, 3, 3, 3)), n(size=2), **_g((1, 1), (1, 1), (1, 1))),
        SampleInput(n(size=(1, 4, 5, 4)), n(size=(4, 2, 2, 3)), None, **_g((2, 1), (0, 2), (2, 1), groups=2)),
        SampleInput(n(size=(2, 3, 7)), n(size=(2, 3, 3)), n(size=2), **_g((2,), (1,), (1,))),
        SampleInput(n(size=(1, 4, 3, 2)), n(size=(4, 2, 3, 2)), n(size=4),
                    **_g((2, 2), (1, 0), (1, 1), transposed=True, output_padding=(1, 0), groups=2)),
        SampleInput(n(size=(1, 2, 4)), n(size=(2, 3, 3)), None,
                    **_g((3,), (0,), (2,), transposed=True, output_padding=(1,))),
        SampleInput(n(size=(4, 8, 12, 12)), n(size=(16, 8, 3, 3)), n(size=16), **_g((1, 1), (1, 1), (1, 1)),
                    grad=False),
        SampleInput(n(size=(3, 5, 33)), n(size=(7, 5, 4)), n(size=7), **_g((3,), (2,), (2,)), grad=False),
        SampleInput(n(size=(2, 6, 9, 9)), n(size=(6, 2, 3, 3)), n(size=6), **_g((2, 2), (1, 1), (1, 1), groups=3,
                    transposed=True, output_padding=(1, 1)), grad=False),
        SampleInput(n(size=(0, 3, 5, 5)), n(size=(2, 3, 3, 3)), None, **_g((1, 1), (0, 0), (1, 1)), grad=False),
        SampleInput(n(size=(2, 1, 8, 8)), n(size=(20, 1, 3, 3)), n(size=20), **_g((1, 1), (1, 1), (1, 1)),
                    grad=False),
    ]


OPS = [
    OpInfo("convolution", lambda *a, **k: dispatch.call("convolution", *a, **k), conv_ref, _samples, dtypes=FLOATS,
           tol={"float16": (2e-2, 5e-3), "bfloat16": (1.5e-1, 2e-2)}, covers=("convolution_backward_weight",)),
]
