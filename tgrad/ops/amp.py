"""Mixed-precision ops (non-differentiable): ``amp_foreach_non_finite_check_and_unscale_``.

PyTorch's ``torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)``: every gradient
is multiplied by inv_scale in place and found_inf (1 element, fp32) is set to 1 if any gradient holds inf or
NaN; one fused launch per (device, dtype) for up to 8 gradients (``kernels/amp.py``).  Returns None.
"""
from ..kernels import amp as K
from ..kernels import elementwise as KE
from ..tensor import empty
from . import Op


def non_finite_check_and_unscale_forward(grads, found_inf, inv_scale):
    if found_inf.numel() != 1 or found_inf.dtype.name != "float32":
        raise RuntimeError("found_inf must be a 1-element float tensor.")
    if inv_scale.numel() != 1 or inv_scale.dtype.name != "float32":
        raise RuntimeError("inv_scale must be a 1-element float tensor.")
    buckets, back = {}, []
    for g in grads:
        if g._storage.device != found_inf._storage.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{g.device} and {found_inf.device}!")
        if not g.dtype.is_floating_point:
            raise RuntimeError(f"_amp_foreach_non_finite_check_and_unscale_: expected floating point gradients, "
                               f"got {g.dtype}")
        if g.numel() == 0:
            continue
        c = g
        if not g.is_contiguous():
            c = KE.copy(g, empty(g.shape, g.dtype, g.device))
            back.append((c, g))
        buckets.setdefault(g.dtype, []).append(c)
    for gs in buckets.values():
        K.non_finite_check_and_unscale(gs, found_inf, inv_scale)
    for c, g in back:
        KE.copy(c, g)


AMP_FOREACH_NON_FINITE_CHECK_AND_UNSCALE = Op(
    "amp_foreach_non_finite_check_and_unscale_", non_finite_check_and_unscale_forward, None, None,
    inputs=("grads", "found_inf", "inv_scale"))


ENTRIES = [AMP_FOREACH_NON_FINITE_CHECK_AND_UNSCALE]
