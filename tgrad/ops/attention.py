"""Attention ops: scaled_dot_product_attention as one fused flash-attention forward and backward.

``scaled_dot_product_attention(query, key, value, attn_mask)`` returns (output, logsumexp), as PyTorch's
``_scaled_dot_product_flash_attention_for_cpu``; its node is PyTorch's CPU one and, like it, only once
differentiable.  Shapes: query (*batch, L, E), key (*batch_k, S, E), value (*batch_k, S, Ev); the batch
dims broadcast, the head dim (-3) of key/value may divide query's with ``enable_gqa``; attn_mask (bool:
True takes part; float: added to the scores) broadcasts to (*batch, L, S).  Dropout gets a fresh Philox
(seed, offset) per call from its caller (F.scaled_dot_product_attention draws it from the device's
generator); the backward redraws the same mask from the attrs instead of storing it.
"""
import math

from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import attention as KA
from ..kernels import elementwise as KE
from ..tensor import empty
from . import Op
from . import call as _call

_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    """PyTorch's argument errors; returns GQA's group size (query heads per key/value head)."""
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if not (query.dtype is key.dtype is value.dtype):
        n = _C_NAMES
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{n[query.dtype.name]} key.dtype: {n[key.dtype.name]} and value.dtype: "
                           f"{n[value.dtype.name]} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected floating point query, key and value, got "
                           f"{query.dtype}")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have at least 2 dimensions")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        if attn_mask.dtype is not D.bool_ and not attn_mask.dtype.is_floating_point:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {_C_NAMES[attn_mask.dtype.name]} and  query.dtype: "
                               f"{_C_NAMES[query.dtype.name]} instead.")
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: key's last dim ({key.shape[-1]}) must equal query's "
                           f"({query.shape[-1]})")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value must have the same sequence length, got "
                           f"{key.shape[-2]} and {value.shape[-2]}")
    hq = query.shape[-3] if query.dim() >= 3 else 1
    hk = key.shape[-3] if key.dim() >= 3 else 1
    if not enable_gqa or hq == hk or query.dim() < 3 or key.dim() < 3:
        return 1
    if hk == 0 or hq % hk or value.shape[-3] != hk:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
    return hq // hk


def _zh(t, batch, tail):
    """(z, h, row, col) strides of ``t`` seen as (Z, H, rows, cols), its batch dims broadcast to ``batch``;
    None if the leading batch dims do not merge into one stride."""
    st = G.expand_strides(t.shape, t.stride(), tuple(batch) + tuple(tail))
    lead, rc = st[:len(batch)], st[len(batch):]
    if not batch:
        return (0, 0, *rc)
    if len(batch) == 1:
        return (0, lead[0], *rc)
    cs, cst = G.collapse(batch[:-1], [lead[:-1]])
    if len(cs) != 1:
        return None
    return (cst[0][0], lead[-1], *rc)


def _strides(t, batch, tail, flat=False):
    """(t or a contiguous copy, its (z, h, row, col) strides).  ``flat`` (cpu, where a program spans many
    heads): also copy when the Z x H heads are not one stride apart (q, k, v split from one projection and
    transposed), as the trace executor replays only single-stride addressing as strided views (a gather
    of such a block costs ~5 ms, a copy launch ~1 ms)."""
    s = _zh(t, batch, tail)
    if flat and s is not None and len(batch) > 1 and batch[-1] > 1 and math.prod(batch[:-1]) > 1 \
            and s[0] != batch[-1] * s[1]:
        s = None
    if s is None:
        t = KE.copy(t, empty(t.shape, t.dtype, t.device))
        s = _zh(t, batch, tail)
        if s is None:
            raise NotImplementedError("scaled_dot_product_attention: more than two batch dims broadcast in the "
                                      f"leading ones ({list(t.shape)} to {list(batch)})")
    return t, s


def _geometry(query, key, value, attn_mask, group):
    """(tensors, geom, out batch shape): geom = (Z, H, L, S, E, Ev, G, q/k/v/mask strides)."""
    L, E = query.shape[-2:]
    S, Ev = value.shape[-2:]
    kb, vb = list(key.shape[:-2]), list(value.shape[:-2])
    if group > 1:
        kb[-1] = vb[-1] = query.shape[-3]
    batch = tuple(G.broadcast_shapes(tuple(query.shape[:-2]), tuple(kb), tuple(vb)))
    kvbatch = batch[:-1] + (batch[-1] // group,) if batch else batch
    flat = not KA.gpu_blocks(query._storage.launch_device)
    q, sq = _strides(query, batch, (L, E), flat)
    k, sk = _strides(key, kvbatch, (S, E), flat)
    v, sv = _strides(value, kvbatch, (S, Ev), flat)
    m, sm = (q, (0, 0, 0, 0)) if attn_mask is None else _strides(attn_mask, batch, (L, S), flat)
    Z, H = (math.prod(batch[:-1]), batch[-1]) if batch else (1, 1)
    return (q, k, v, m), (Z, H, L, S, E, Ev, group, sq, sk, sv, sm), batch


def _mask_kind(attn_mask):
    if attn_mask is None:
        return KA.MASK_NONE
    return KA.MASK_BOOL if attn_mask.dtype is D.bool_ else KA.MASK_ADD


def sdpa_forward(query, key, value, attn_mask=None, *, dropout_p=0.0, is_causal=False, scale=None,
                 enable_gqa=False, seed=None, offset=None):
    """(output (*batch, L, Ev), logsumexp (*batch, L) in fp32 / fp64): one fused kernel launch.  A dropout
    takes its Philox key and first counter as ``seed``/``offset`` (drawn by the caller from a generator:
    the table never reads the random state); the backward redraws the same mask from them."""
    group = _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    (q, k, v, m), geom, batch = _geometry(query, key, value, attn_mask, group)
    L, Ev = geom[2], geom[5]
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    out = empty(batch + (L, Ev), query.dtype, query.device)
    lse = empty(batch + (L,), D.float64 if query.dtype is D.float64 else D.float32, query.device)
    if dropout_p > 0 and seed is None:
        raise ValueError("scaled_dot_product_attention: a dropout takes seed= and offset= (drawn from a generator)")
    seed, offset = (seed, offset) if dropout_p > 0 else (0, 0)
    KA.forward(q, k, v, m, out, lse, geom, scale=sc, p=float(dropout_p), seed=seed, offset=offset,
               causal=bool(is_causal), mask_kind=_mask_kind(attn_mask))
    return out, lse


def sdpa_backward(ctx, grad, _lse_grad=None):
    s, a = ctx.saved, ctx.attrs
    dq, dk, dv = _call("scaled_dot_product_attention_backward", grad, s["query"], s["key"], s["value"],
                       s.get("attn_mask"), s["result"], s["result1"], dropout_p=a.get("dropout_p", 0.0),
                       is_causal=a.get("is_causal", False), scale=a.get("scale"),
                       enable_gqa=a.get("enable_gqa", False), seed=a.get("seed"), offset=a.get("offset"))
    return dq, dk, dv, None


SCALED_DOT_PRODUCT_ATTENTION = Op(
    "scaled_dot_product_attention", sdpa_forward, sdpa_backward, "ScaledDotProductFlashAttentionForCpuBackward0",
    inputs=("query", "key", "value", "attn_mask"), save=("query", "key", "value", "attn_mask", "result",
    "result1"),
    outputs=2, nondiff_outputs=(1,), once_differentiable=True)


def sdpa_backward_forward(grad_out, query, key, value, attn_mask, out, logsumexp, *, dropout_p=0.0,
                          is_causal=False, scale=None, enable_gqa=False, seed=None, offset=None):
    """(grad_query, grad_key, grad_value) at the broadcast shapes: two fused kernel launches (dq, then dk/dv)."""
    group = _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    (q, k, v, m), geom, batch = _geometry(query, key, value, attn_mask, group)
    Z, H, L, S, E, Ev = geom[:6]
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    seed, offset = (seed, offset) if dropout_p > 0 else (0, 0)
    do = grad_out if grad_out.is_contiguous() else KE.copy(grad_out, empty(grad_out.shape, grad_out.dtype,
                                                                           grad_out.device))
    kvbatch = batch[:-1] + (batch[-1] // group,) if batch else batch
    dq = empty(batch + (L, E), query.dtype, query.device)
    dk = empty(kvbatch + (S, E), key.dtype, key.device)
    dv = empty(kvbatch + (S, Ev), value.dtype, value.device)
    delta = empty(logsumexp.shape, logsumexp.dtype, logsumexp.device)
    KA.backward(q, k, v, m, out, do, logsumexp, delta, dq, dk, dv, geom, scale=sc, p=float(dropout_p), seed=seed,
                offset=offset, causal=bool(is_causal), mask_kind=_mask_kind(attn_mask))
    return dq, dk, dv


SCALED_DOT_PRODUCT_ATTENTION_BACKWARD = Op(
    "scaled_dot_product_attention_backward", sdpa_backward_forward, None, None,
    inputs=("grad_out", "query", "key", "value", "attn_mask", "out", "logsumexp"), outputs=3)


ENTRIES = [SCALED_DOT_PRODUCT_ATTENTION, SCALED_DOT_PRODUCT_ATTENTION_BACKWARD]
