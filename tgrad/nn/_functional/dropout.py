"""Dropout functions of ``torch.nn.functional``: element-wise (a table op) and whole channels."""
import warnings

from ... import _nn_functional


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p); ``input`` itself when not
    training or p == 0."""
    return _nn_functional._dropout(input, p, training, inplace)


def _channel_dropout(input, p, training, inplace, batched_dim, name):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    batched = input.dim() == batched_dim
    shape = tuple(input.shape[:2] if batched else input.shape[:1]) + (1,) * (input.dim() - (2 if batched else 1))
    if p == 1.0:
        keep = input.new_zeros(())
    else:       # PyTorch's feature noise: bernoulli_(1 - p) of a (N, C, 1, ...) tensor, then div_(1 - p)
        keep = input.new_empty(shape).bernoulli_(1.0 - p).div_(1.0 - p)
    return input.mul_(keep) if inplace else input * keep


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) / (C, L) input with probability p, scale the rest by 1 / (1 - p)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p, scale the rest by 1 / (1 - p)."""
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
                      "inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, input.dim() if input.dim() != 4 else 4, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) input with probability p, scale the rest by
    1 / (1 - p)."""
    if input.dim() not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will "
                      "result in an error in a future release. To retain the behavior and silence this warning, "
                      "please use dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
                      "inputs with 3 spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, 5, "dropout3d")
