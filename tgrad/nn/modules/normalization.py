"""``LayerNorm``, ``BatchNorm1d/2d/3d``, ``SyncBatchNorm``, ``GroupNorm``, ``InstanceNorm1d/2d``."""
import warnings

from ..._creation import empty, ones, tensor, zeros
from ... import _functional as _f
from ... import distributed as dist
from ... import dtypes as D
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _affine_parameters(module, shape, bias, device, dtype):
    """``weight`` (and ``bias`` when ``bias``) of ``shape``, uninitialized; both None when ``shape`` is None."""
    module.register_parameter("weight", None if shape is None else Parameter(empty(shape, device=device, dtype=dtype)))
    module.register_parameter("bias", None if shape is None or not bias else
                              Parameter(empty(shape, device=device, dtype=dtype)))


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims; weight (ones) and bias (zeros) of that shape."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape if elementwise_affine else None, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class _BatchNorm(Module):
    """Per-channel normalization over the batch (and spatial) dims.

    Training uses the batch statistics and updates the ``running_mean``/``running_var``
    buffers (momentum None: cumulative average over ``num_batches_tracked``); eval uses
    the running statistics.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features if affine else None, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=D.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias, bn_training, factor,
                            self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _SyncBatchNormFn(Function):
    """Batch norm with the statistics of the whole process group: the per-channel sum and count, then the sum of
    squared deviations, all-reduced (two passes: no cancellation); backward all-reduces sum(dy) and
    sum(dy xhat) (the weight and bias gradients stay local: DDP averages them).
    dx = (dy - mean(dy) - xhat mean(dy xhat)) invstd w, the means over every rank's rows."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group):
        dims = [0] + list(range(2, input.dim()))
        shape = [1, -1] + [1] * (input.dim() - 2)
        x = input.detach()
        stats = _flat(x.sum(dims), float(x.numel() // x.size(1)))
        dist.all_reduce(stats, group=group)
        count = stats[-1].item()
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
        mean = stats[:-1] / count
        xmu = x - mean.reshape(shape)
        sq = xmu.square().sum(dims)
        dist.all_reduce(sq, group=group)
        var = sq / count
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
                running_var.mul_(1 - momentum).add_((var * (count / (count - 1))).to(running_var.dtype) * momentum)
        xhat = xmu * invstd.reshape(shape)
        y = xhat
        if weight is not None:
            y = y * weight.detach().reshape(shape)
        if bias is not None:
            y = y + bias.detach().reshape(shape)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.dims, ctx.shape, ctx.count, ctx.group = dims, shape, count, group
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, dy):
        xhat, invstd, weight = ctx.saved_tensors
        dims, shape = ctx.dims, ctx.shape
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)
        gw = sum_dy_xhat.clone() if weight is not None and ctx.needs_input_grad[1] else None
        gb = sum_dy.clone() if ctx.has_bias and ctx.needs_input_grad[2] else None
        gx = None
        if ctx.needs_input_grad[0]:
            red = _flat(sum_dy, None, sum_dy_xhat)
            dist.all_reduce(red, group=ctx.group)
            c = sum_dy.numel()
            mean_dy, mean_dy_xhat = red[:c] / ctx.count, red[c:] / ctx.count
            scale = invstd if weight is None else invstd * weight
            gx = (dy - mean_dy.reshape(shape) - xhat * mean_dy_xhat.reshape(shape)) * scale.reshape(shape)
        return gx, gw, gb, None, None, None, None, None


def _flat(a, count=None, b=None):
    """One flat buffer for one all_reduce: [a, b] or [a, count]."""
    parts = [a] if b is None else [a, b]
    if count is not None:
        parts.append(a.new_full((1,), count))
    return _f.cat(parts)


class SyncBatchNorm(_BatchNorm):
    """BatchNorm whose training statistics are those of the whole process group when ``tgrad.distributed`` is
    initialized with more than one rank (all-reduced over MPI for cpu tensors, NCCL for cuda ones: tgrad's
    collectives serve both, where PyTorch refuses cpu input); otherwise plain batch norm, as PyTorch."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        need_sync = self.training and dist.is_available() and dist.is_initialized()
        group = None
        if need_sync:
            group = self.process_group or None      # None: the default (world) group
            need_sync = dist.get_world_size(group) > 1
        if not need_sync:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        rm = self.running_mean if self.track_running_stats else None
        rv = self.running_var if self.track_running_stats else None
        return _SyncBatchNormFn.apply(input, self.weight, self.bias, rm, rv, self.eps, factor, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*D replaced by a SyncBatchNorm sharing its parameters and buffers."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output


class BatchNorm1d(_BatchNorm):
    """Batch norm of (N, C) or (N, C, L) input over N (and L)."""

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm of (N, C, H, W) input over N, H and W."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm of (N, C, D, H, W) input over N, D, H and W."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class GroupNorm(Module):
    """Normalize each (sample, group of num_channels / num_groups channels); per-channel weight (ones) and
    bias (zeros)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels if affine else None, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """Per-(sample, channel) normalization over the spatial dims (PyTorch's defaults: no affine, no
    running statistics); unbatched input is accepted."""

    _nd = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise ValueError(f"expected {nd + 1}D or {nd + 2}D input (got {input.dim()}D input)")
        fdim = input.dim() - nd - 1
        if input.size(fdim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={fdim} to match num_features ({self.num_features}), "
                                 f"but got: {input.size(fdim)}.")
            warnings.warn(f"input's size at dim={fdim} does not match num_features. You can silence this warning "
                          "by not passing in num_features, which is not used because affine=False", stacklevel=2)
        unbatched = input.dim() == nd + 1
        x = input.unsqueeze(0) if unbatched else input
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, self.momentum if self.momentum is not None
                            else 0.1, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of (N, C, L) or (C, L) input."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of (N, C, H, W) or (C, H, W) input."""

    _nd = 2


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing ``normalized_shape`` dims (weight: ones)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape if elementwise_affine else None, False, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _CrossMapLRN2dFn(Function):
    """PyTorch's legacy cross-channel LRN (torch/nn/_functions.py), forward and its own backward step for step:
    scale_c = k + alpha / size * (a running sum of x^2 over neighbouring channels: the previous channel's, plus the
    one entering, minus the one leaving), out = x * scale^-beta; the backward is that function's formula (not the
    exact gradient of the forward), so gradients print as PyTorch's."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        sq = input * input
        channels = input.shape[1]
        pre_pad = int((size - 1) / 2 + 1)
        cur = zeros(sq[:, 0].shape, dtype=input.dtype, device=input.device)
        for c in range(min(pre_pad, channels)):
            cur = cur + sq[:, c]
        scales = [cur]
        for c in range(1, channels):
            if c < channels - pre_pad + 1:
                cur = cur + sq[:, c + pre_pad - 1]
            if c > pre_pad:
                cur = cur - sq[:, c - pre_pad]
            scales.append(cur)
        scale = _f.stack(scales, 1) * (alpha / size) + k
        out = scale.pow(-beta) * input
        ctx.save_for_backward(input, out)
        ctx.scale, ctx.size, ctx.alpha, ctx.beta = scale, size, alpha, beta
        return out

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        size, scale = ctx.size, ctx.scale
        batch, channels, h, w = input.shape
        ratio = 2 * ctx.alpha * ctx.beta / size
        inv_pre_pad = int(size - (size - 1) / 2)
        if inv_pre_pad + channels > channels + size - 1:
            raise RuntimeError(f"start ({inv_pre_pad}) + length ({channels}) exceeds dimension size "
                               f"({channels + size - 1}).")
        grad_input = scale.pow(-ctx.beta) * grad_output
        pad = zeros((size - 1, h, w), dtype=input.dtype, device=input.device)
        rows = []
        for n in range(batch):
            center = grad_output[n] * output[n] / scale[n]
            padded = _f.cat([pad[:inv_pre_pad], center, pad[inv_pre_pad:]], 0)
            accum = zeros((h, w), dtype=input.dtype, device=input.device)
            for i in range(size - 1):
                accum = accum + padded[i]
            per_c = []
            for c in range(channels):
                accum = accum + padded[c + size - 1]
                per_c.append(grad_input[n, c] + input[n, c] * -ratio * accum)
                accum = accum - padded[c]
            rows.append(_f.stack(per_c, 0))
        return _f.stack(rows, 0), None, None, None, None


class CrossMapLRN2d(Module):
    """Legacy cross-channel local response normalization of 4-d input (see ``_CrossMapLRN2dFn``)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _CrossMapLRN2dFn.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
