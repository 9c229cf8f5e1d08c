"""Attention of ``torch.nn.functional``: scaled dot-product attention (one fused flash-attention op)
and PyTorch's multi-head attention forward built on it."""
import math
import warnings

from ..._creation import zeros, zeros_like
from ..._functional import cat
from ..._nn_functional import _op
from ...autograd.grad_mode import is_grad_enabled
from ...backends import cuda as _backends_cuda
from ...ops.attention import _check as _sdpa_check
from ...random import default_generator_for
from .activation import softmax
from .dropout import dropout
from .linear import linear
from .vision import pad


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with dropout on the attention weights.

    query (*, L, E), key (*, S, E), value (*, S, Ev) -> (*, L, Ev); scale defaults to 1 / sqrt(E).  One fused
    flash-attention kernel (no L x S matrix in memory).  A float ``attn_mask`` that requires grad takes
    PyTorch's math path instead (matmul, softmax, matmul), which differentiates the mask too.
    """
    if attn_mask is not None and attn_mask.requires_grad and attn_mask.dtype.is_floating_point \
            and is_grad_enabled():
        return _sdpa_math(query, key, value, attn_mask, dropout_p, scale, enable_gqa)
    if not _backends_cuda.flash_sdp_enabled():        # (nn.attention.sdpa_kernel): the math path, or none
        if not _backends_cuda.math_sdp_enabled():
            raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due "
                               "to turning off both the math kernel and the fused kernels.")
        _sdpa_check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
        return _sdpa_math(query, key, value, _sdpa_bias(query, key, attn_mask, is_causal), dropout_p, scale,
                          enable_gqa)
    if dropout_p > 0 and query.device.type == "cpu":
        # PyTorch's cpu path for a dropout: the math path, whose dropout draws the cpu generator's bernoulli_
        _sdpa_check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
        return _sdpa_math(query, key, value, _sdpa_bias(query, key, attn_mask, is_causal), dropout_p, scale,
                          enable_gqa)
    rng = {}
    if dropout_p > 0:       # a counter per attention weight: (query rows) x S
        n = (query.numel() // max(query.shape[-1], 1)) * key.shape[-2]
        rng = dict(zip(("seed", "offset"), default_generator_for(query.device)._take(n)))
    return _op("scaled_dot_product_attention", query, key, value, attn_mask, dropout_p=dropout_p,
               is_causal=is_causal, scale=scale, enable_gqa=enable_gqa, **rng)[0]


def _sdpa_math(query, key, value, attn_mask, dropout_p, scale, enable_gqa):
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
    # ATen's math path: query and key each scaled by sqrt(|scale|) before the matmul (the sign on query)
    s = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    r = math.sqrt(abs(s))
    w = (query * (-r if s < 0 else r)) @ (key.transpose(-2, -1) * r)
    if attn_mask is not None:
        w = w + attn_mask
    w = softmax(w, dim=-1)
    if dropout_p > 0:
        w = dropout(w, dropout_p)
    return w @ value


def _sdpa_bias(query, key, attn_mask, is_causal):
    """The additive float mask of ``attn_mask`` (bool: True = attend) and ``is_causal``; None when neither."""
    L, S = query.shape[-2], key.shape[-2]
    bias = None
    if is_causal:
        bias = query.new_zeros((L, S)).masked_fill(query.new_ones((L, S), dtype=bool).tril().logical_not(),
                                                   float("-inf"))
    if attn_mask is not None:
        m = attn_mask
        if m.dtype == bool:
            m = query.new_zeros(m.shape).masked_fill(m.logical_not(), float("-inf"))
        bias = m if bias is None else bias + m
    return bias


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) as an additive float mask of ``target_type`` (-inf where masked)."""
    if mask is None:
        return None
    if mask.dtype.name != "bool" and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and other_type != mask.dtype:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.")
    if mask.dtype.name == "bool":
        return zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _in_projection_packed(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:      # self-attention: one projection, then split
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = linear(q, w_q, b_q)
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's multi-head attention on (L, N, E) query, (S, N, kdim) key, (S, N, vdim) value (or unbatched
    (L, E) ...).  Masks: bool True = masked out, float = added; key_padding_mask (N, S), attn_mask (L, S) or
    (N * num_heads, L, S).  Returns (output (L, N, E), weights (N, L, S) averaged / (N, H, L, S), or None)."""
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None        # sdpa's own causal mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zshape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(zshape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * (1.0 / head_dim) ** 0.5
        if attn_mask is not None:
            w = attn_mask.baddbmm(q_scaled, k.transpose(-2, -1))
        else:
            w = q_scaled.bmm(k.transpose(-2, -1))
        w = softmax(w, dim=-1)
        if dropout_p > 0.0:
            w = dropout(w, p=dropout_p)
        out = w.bmm(v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, out.size(1))
        w = w.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not is_batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.size(0) == 1 and attn_mask.dim() == 3 \
            else attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None
