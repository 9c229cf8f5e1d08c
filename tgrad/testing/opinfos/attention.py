"""OpInfos for the attention ops: scaled_dot_product_attention (its backward is covered by the gradchecks).

Boolean masks are passed as ``_Mask`` (a bool tensor on the op's device; the reference sees the array) so the
dtype under test applies to query, key, value and additive masks only.  Dropout is tested in
tests/ops/test_attention.py (its draw is not a function of the inputs).
"""
import numpy as np

from tgrad import dtypes as D
from tgrad.autograd import dispatch

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)


class _Mask:
    """A boolean mask argument: a bool tensor on the op's device; the reference sees the array."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=bool)

    def tensor(self, like):
        from tgrad import _creation as creation
        return creation.tensor(self.a, dtype=D.bool_, device=like.device)

    def __repr__(self):
        return f"Mask{self.a.shape}"


def sdpa_ref(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, seed=None,
             offset=None):
    """softmax(q k^T * scale + mask) v in float64 numpy; rows with no allowed key give 0 (PyTorch 2.13).
    dropout_p: only 0 or 1 (all weights dropped: zeros)."""
    if isinstance(attn_mask, _Mask):
        attn_mask = attn_mask.a
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, rep, -3), np.repeat(v, rep, -3)
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    L, S = s.shape[-2:]
    if is_causal:
        attn_mask = np.tril(np.ones((L, S), bool))
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    den = e.sum(-1, keepdims=True)
    return np.where(den > 0, e / np.where(den > 0, den, 1.0), 0.0) @ v * (dropout_p != 1.0)


def _sdpa(q, k, v, attn_mask=None, **kw):
    if isinstance(attn_mask, _Mask):
        attn_mask = attn_mask.tensor(q)
    return dispatch.call("scaled_dot_product_attention", q, k, v, attn_mask, **kw)[0]


def _samples(rng):
    n = rng.normal
    holes = rng.uniform(size=(4, 6)) > 0.4
    holes[1] = False                     # a query row that sees no key: output 0, gradient 0
    return [
        SampleInput(n(size=(1, 2, 3, 4)), n(size=(1, 2, 3, 4)), n(size=(1, 2, 3, 4))),
        SampleInput(n(size=(2, 1, 4, 3)), n(size=(2, 1, 4, 3)), n(size=(2, 1, 4, 3)), is_causal=True),
        SampleInput(n(size=(1, 2, 4, 3)), n(size=(1, 2, 6, 3)), n(size=(1, 2, 6, 2)), _Mask(holes)),
        SampleInput(n(size=(2, 2, 2, 3)), n(size=(2, 2, 4, 3)), n(size=(2, 2, 4, 2)), n(size=(2, 1, 2, 4)),
                    scale=0.7),
        SampleInput(n(size=(3, 4)), n(size=(5, 4)), n(size=(5, 2)), scale=1.3),
        SampleInput(n(size=(2, 3, 4)), n(size=(1, 3, 4)), n(size=(1, 3, 4)), is_causal=True),
        SampleInput(n(size=(1, 4, 3, 2)), n(size=(1, 2, 4, 2)), n(size=(1, 2, 4, 3)), is_causal=True, enable_gqa=True),
        SampleInput(n(size=(2, 1, 2, 2, 3)), n(size=(2, 1, 2, 3, 3)), n(size=(2, 1, 2, 3, 3))),
        # several query and key blocks on cpu: the online softmax across blocks, causal skipping
        SampleInput(n(size=(1, 2, 130, 16)), n(size=(1, 2, 130, 16)), n(size=(1, 2, 130, 8)), is_causal=True,
                    grad=False),
        SampleInput(n(size=(2, 1, 33, 40)), n(size=(2, 1, 300, 40)), n(size=(2, 1, 300, 24)),
                    _Mask(rng.uniform(size=(33, 300)) > 0.3), grad=False),
        SampleInput(n(size=(1, 1, 0, 8)), n(size=(1, 1, 5, 8)), n(size=(1, 1, 5, 8)), grad=False),
        # the dropout kernels (a random mask's values are checked in tests/ops/test_attention.py)
        SampleInput(n(size=(1, 2, 3, 4)), n(size=(1, 2, 3, 4)), n(size=(1, 2, 3, 4)), dropout_p=1.0, is_causal=True,
                    seed=0, offset=0),
    ]


OPS = [
    OpInfo("scaled_dot_product_attention", _sdpa, sdpa_ref, _samples, dtypes=FLOATS, diff_args=(0, 1, 2),
           gradgrad=False, tol={"float16": (3e-3, 3e-3), "bfloat16": (3e-2, 2e-2)},
           covers=("scaled_dot_product_attention_backward",)),
]
