"""Autocast's cast policy: which op-table entries run in the low precision dtype, which in float32, which
at the widest input type; PyTorch 2.13's lists (``aten/src/ATen/autocast_mode.cpp``) for each device,
under tgrad's op names.

- ``LOWER``: floating inputs (except float64) are cast to the autocast dtype (fp16 / bf16): matmuls,
  linear, attention (and convolutions, under the names they will have in the table).
- ``FP32``: floating inputs (except float64) are cast to float32: ops that lose too much in 16 bits
  (exp/log/pow, softmax family, norms, reductions, losses; PyTorch's cuda list is longer than its cpu one).
- ``PROMOTE``: inputs are cast to the widest floating dtype among them (cat/stack of mixed tensors ...).
- ``BANNED``: PyTorch raises for these under autocast (binary_cross_entropy on cuda).
Every other op runs in whatever dtype its inputs have.
"""
_CONV = {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution"}
_MATMUL = {"mm", "bmm", "addmm", "baddbmm", "linear", "scaled_dot_product_attention"} | _CONV
_LOSSES = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "nll_loss", "nll_loss2d",
           "cross_entropy", "binary_cross_entropy_with_logits"}

LOWER = {
    "cuda": _MATMUL | {"mv", "prelu"},
    "cpu": _MATMUL | {"prelu"},
}
FP32 = {
    "cuda": _LOSSES | {"exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt", "tan", "pow",
                       "pow_tensor", "pow_scalar_base", "softplus", "layer_norm", "group_norm", "norm",
                       "cosine_similarity", "logsumexp", "softmax", "log_softmax", "sum", "sum_all", "prod",
                       "prod_all", "cumsum", "cumprod"},
    "cpu": _LOSSES | {"binary_cross_entropy", "prod", "prod_all"},
}
PROMOTE = {"cat", "stack", "addcdiv", "addcmul", "atan2", "dot", "vdot", "index_put", "scatter_add", "lerp_tensor"}
BANNED = {
    "cuda": {"binary_cross_entropy": "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
                                     "autocast.\nMany models use a sigmoid layer right before the binary cross "
                                     "entropy layer.\nIn this case, combine the two layers using "
                                     "torch.nn.functional.binary_cross_entropy_with_logits\nor "
                                     "torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
                                     "BCEWithLogits are\nsafe to autocast."},
    "cpu": {},
}
