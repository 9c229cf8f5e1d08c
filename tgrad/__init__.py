"""tgrad: a torch-free deep-learning framework on Triton.

``import tgrad as torch``: tensors on ``cpu`` (Triton's interpreter) or
``cuda`` (Triton's compiler), autograd with PyTorch's semantics, nn, optim
and utils.data.
"""
from . import tensor as _tensor  # first: the core, bottom to top (tensor.py's last lines bring in the floors above)
from . import autograd, cuda, dtypes  # noqa: E402
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: E402
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,  # noqa: E402
                       linspace, ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like,
                       randperm, scalar_tensor, tensor, zeros, zeros_like)
from .creation import bernoulli, normal  # noqa: E402
from .device import device, get_default_device, set_default_device  # noqa: E402
from .dtypes import (bfloat16, bool_ as bool, dtype, float16, float32, float64, get_default_dtype,  # noqa: E402
                     int8, int16, int32, int64, promote_types, set_default_dtype, uint8)
from .functions import (add, broadcast_to, clone, div, divide, equal, exp, flatten, is_floating_point,  # noqa: E402
                        is_tensor, mean, mul, multiply, neg, negative, numel, permute, pow, reshape, select,
                        squeeze, sub, subtract, sum, swapaxes, swapdims, t, transpose, true_divide, unsqueeze)
from .functions import (all, amax, amin, any, argmax, argmin, cumprod, cumsum, logsumexp, max, min,  # noqa: E402
                        norm, prod, std, var)
from .functions import argsort, msort, multinomial, sort, topk  # noqa: E402
from . import linalg, return_types  # noqa: E402
from . import accelerator, backends  # noqa: E402
from .functions import addmm, baddbmm, bmm, dot, ger, inner, matmul, mm, mv, outer, rsub, vdot  # noqa: E402
from .functions import (argwhere, atleast_1d, atleast_2d, atleast_3d, cat, chunk, column_stack,  # noqa: E402
                        concat, concatenate, diag, diag_embed, diagonal, dstack, flip, fliplr, flipud, gather,
                        hstack, index_add, index_fill, index_put, index_select, masked_fill, masked_scatter,
                        masked_select, meshgrid, moveaxis, movedim, narrow, nonzero, ravel, repeat_interleave, roll,
                        row_stack, scatter, scatter_add, split, stack, take, take_along_dim, tile, tril, triu, unbind,
                        unflatten, vstack)
from .functions import (abs, absolute, addcdiv, addcmul, arctan2, atan2, bitwise_and, bitwise_not,  # noqa: E402
                        bitwise_or, bitwise_xor, ceil, clamp, clamp_max, clamp_min, clip, cos, eq, erf, exp2, expm1,
                        fix, floor, floor_divide, fmod, frac, ge, greater, greater_equal, gt, isfinite, isinf, isnan,
                        le, lerp, less, less_equal, log, log1p, log2, log10, logical_and, logical_not, logical_or,
                        logical_xor, lt, maximum, minimum, nan_to_num, ne, not_equal, reciprocal, relu, remainder,
                        round, rsqrt, selu, sigmoid, sign, sin, sqrt, square, tan, tanh, trunc, where)
from .functions import (batch_norm, cosine_similarity, dropout, embedding, layer_norm, log_softmax,  # noqa: E402
                        softmax)
from .legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor,  # noqa: E402
                     HalfTensor, IntTensor, LongTensor, ShortTensor)
from .memory import OutOfMemoryError  # noqa: E402
from .memory.stats import (empty_cache, max_memory_allocated, max_memory_reserved, memory_allocated,  # noqa: E402
                           memory_reserved, memory_stats, memory_summary, reset_peak_memory_stats)
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,  # noqa: E402
                     set_rng_state)
from .tensor import Size, Tensor, contiguous_format, memory_format, preserve_format  # noqa: E402
Tensor.__module__ = Size.__module__ = "tgrad"  # shown as tgrad.Tensor, as PyTorch shows torch.Tensor
from . import distributed, nn, optim, utils  # noqa: E402
from .nn.functional import (adaptive_avg_pool1d, adaptive_max_pool1d, avg_pool1d, conv1d, conv2d,  # noqa: E402
                            conv_transpose1d, conv_transpose2d, group_norm, instance_norm, max_pool1d,
                            max_pool1d_with_indices, max_pool2d)
from . import amp, cpu  # noqa: E402
from .amp import autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled  # noqa: E402
from .amp.autocast_mode import (clear_autocast_cache, is_autocast_cache_enabled,  # noqa: E402,F401
                                set_autocast_cache_enabled)
from . import profiler  # noqa: E402
from .serialization import load, save  # noqa: E402
from ._compile import compile  # noqa: E402
from .threads import get_num_threads, set_num_threads  # noqa: E402
from .utils.dlpack import from_dlpack  # noqa: E402

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16

__version__ = "0.1.0"
