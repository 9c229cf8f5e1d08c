"""tgrad: a torch-free deep-learning framework on Triton.

``import tgrad as torch``: tensors on ``cpu`` (Triton's interpreter) or
``cuda`` (Triton's compiler), autograd with PyTorch's semantics, nn, optim
and utils.data.
"""
import math as _math

# first the core, bottom to top (tensor.py's last lines bring in the floors above it)
from . import tensor as _tensor  # noqa: F401
from . import (accelerator, amp, autograd, backends, cpu, cuda, distributed, dtypes, linalg, multiprocessing, nn,
               optim, profiler, return_types, testing, utils)
from ._compile import compile
from . import _dynamo, compiler
from ._creation import (arange, as_tensor, bernoulli, empty, empty_like, eye, from_numpy, full, full_like,
                        linspace, ones, ones_like, rand, rand_like, randint, randint_like, randn, randn_like, randperm,
                        normal, scalar_tensor, tensor, zeros, zeros_like)
from ._functional import _dirichlet_grad, _sample_dirichlet, _standard_gamma, _standard_gamma_grad, binomial
from ._functional import (abs, absolute, acos, acosh, add, addcdiv, addcmul, addmm, all, amax, amin, any, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, argmax,
                          argmin, argsort, argwhere, asin, asinh, atan, atan2, atanh, atleast_1d, atleast_2d, atleast_3d, baddbmm,
                          bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor, bmm, broadcast_to, cat, ceil, chunk,
                          clamp, clamp_max, clamp_min, clip, clone, column_stack, concat, concatenate, cos, cosh, cummax,
                          cummin, cumprod,
                          cumsum, diag, diag_embed, diagonal, digamma, div, divide, dot, dstack, eq, equal, erf, erfc, erfinv, exp, exp2,
                          expm1, fix, flatten, flip, fliplr, flipud, floor, floor_divide, fmod, frac, gather, ge,
                          ger, greater, greater_equal, gt, hstack, index_add, index_fill, index_put, index_reduce,
                          index_select,
                          inner, is_floating_point, is_tensor, typename, isfinite, isinf, isnan, le, lerp, less, less_equal, lgamma, i0, igamma, igammac, nextafter, frexp,
                          log, log10, log1p, log2, logcumsumexp, logical_and, logical_not, logical_or, logical_xor, logsumexp, lt,
                          masked_fill, masked_scatter, masked_select, matmul, max, maximum, mean, meshgrid, min,
                          minimum, mm, moveaxis, movedim, msort, mul, multinomial, multiply, mv, mvlgamma, nan_to_num, narrow,
                          ne, neg, negative, nonzero, norm, not_equal, numel, outer, permute, poisson, polygamma, pow, prod, ravel,
                          reciprocal, relu, remainder, repeat_interleave, reshape, roll, round, row_stack, rsqrt,
                          rsub, scatter, scatter_add, scatter_reduce, select, selu, sigmoid, sign, sin, sinh, sort, split, sqrt, square,
                          squeeze, stack, std, sub, subtract, sum, swapaxes, swapdims, t, take, put, take_along_dim, tan,
                          tanh, tile, topk, transpose, tril, triu, true_divide, trunc, unbind, unflatten, unsqueeze,
                          var, vdot, vstack, where)
from ._functional_more import (adjoint, allclose, bartlett_window, blackman_window, kaiser_window, broadcast_shapes,
                               broadcast_tensors, conj, conj_physical, copysign, corrcoef, count_nonzero, cov,
                               deg2rad, detach, diagonal_scatter, dsplit, fmax, fmin, hamming_window, hann_window,
                               heaviside, hsplit, hypot, index_copy, is_complex, is_conj, is_neg, is_nonzero,
                               is_same_size, is_signed, isclose, isneginf, isposinf, isreal, ldexp, logaddexp,
                               logaddexp2, nanmean, nansum, positive, rad2deg, resolve_conj, resolve_neg,
                               result_type, rot90, select_scatter, sgn, signbit, sinc, slice_scatter, tensor_split,
                               vsplit)
from ._settings import (are_deterministic_algorithms_enabled, get_deterministic_debug_mode,
                        get_float32_matmul_precision, is_deterministic_algorithms_warn_only_enabled,
                        set_deterministic_debug_mode, set_float32_matmul_precision, use_deterministic_algorithms)
from ._tensor_str import set_printoptions
from ._nn_functional import (batch_norm, cosine_similarity, dropout, dropout_, embedding, layer_norm, log_softmax, softmax)
from ._legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
                      IntTensor, LongTensor, ShortTensor)
from .amp import (autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled)
from .amp.autocast_mode import (clear_autocast_cache, is_autocast_cache_enabled, set_autocast_cache_enabled)
from .autograd.anomaly import (is_anomaly_check_nan_enabled, is_anomaly_enabled)
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                                 set_grad_enabled)
from .device import (device, get_default_device, set_default_device)
from .dtypes import (finfo, iinfo, bfloat16, bool_ as bool, complex64, complex128, dtype, float16, float32, float64, get_default_dtype, int16, int32,
                     int64, int8, promote_types, set_default_dtype, uint8)
from .memory import OutOfMemoryError
from .memory.stats import (empty_cache, max_memory_allocated, max_memory_reserved, memory_allocated,
                           memory_reserved, memory_stats, memory_summary, reset_peak_memory_stats)
from ._inplace import (abs_, acos_, acosh_, addmv_, arccos_, arccosh_, arcsin_, arcsinh_, arctan_, arctanh_,
                       as_strided_, asin_, asinh_, atan_, atanh_, ceil_, clamp_, clamp_max_, clamp_min_, clip_,
                       conj_physical_, cos_, cosh_, deg2rad_, i0_, detach_, erf_, erfc_, exp2_, exp_, expm1_, fill_, fix_,
                       floor_, frac_, index_put_, ldexp_, log10_, log1p_, log2_, log_, logit_, nan_to_num_, neg_,
                       negative_, rad2deg_, reciprocal_, relu_, round_, rsqrt_, sigmoid_, sin_, sinc_, sinh_, sqrt_,
                       square_, tan_, tanh_, trunc_, xlogy_, zero_)
from .nn.functional import celu_, rrelu_, selu_, threshold_  # noqa: E402  (torch.selu_ is F.selu_)
from .nn.functional import (adaptive_avg_pool1d, adaptive_max_pool1d, alpha_dropout, avg_pool1d, bilinear, celu,
                            channel_shuffle, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                            conv_transpose3d, feature_alpha_dropout, group_norm, hardshrink, instance_norm, max_pool1d,
                            max_pool1d_with_indices, max_pool2d, max_pool3d, pairwise_distance, pixel_shuffle,
                            pixel_unshuffle, prelu, rms_norm, rrelu, threshold)
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state)
from .serialization import (load, save)
from .tensor import (channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format, Size,
                     Tensor)
from ._sparse import (layout, sparse_bsc, sparse_bsc_tensor, sparse_bsr, sparse_bsr_tensor, sparse_coo,
                      sparse_coo_tensor, sparse_csc, sparse_csc_tensor, sparse_csr, sparse_csr_tensor, strided)
from . import sparse  # noqa: E402  (torch.sparse: sum, mm, addmm, check_sparse_tensor_invariants)
from .threads import (get_num_threads, set_num_threads)
from . import distributions, special  # noqa: F401,E402  (the floors above nn: distributions, special functions)
from . import func  # noqa: F401,E402  (function transforms: torch.func)
from . import fft  # noqa: F401,E402  (torch.fft)
from .fft import istft, stft  # noqa: F401,E402
from . import jit  # noqa: F401,E402  (TorchScript entry points, run eagerly)
from .func import vmap  # noqa: E402
from ._functional_more import cumulative_trapezoid, trapezoid, trapz  # noqa: F401
from ._functional_more import angle, complex, imag, polar, real, view_as_complex, view_as_real  # noqa: F401
from ._functional_more import (addbmm, addmv, addr, aminmax, bincount, block_diag, bucketize, cartesian_prod, cdist,
                               combinations, cross, diagflat, diff, dist, einsum, fake_quantize_per_channel_affine,
                               fake_quantize_per_tensor_affine, float_power, histc, histogram, histogramdd, isin,
                               kron, kthvalue, logit, logspace, median, mode, nanmedian, nanquantile, pdist, quantile,
                               searchsorted, std_mean, tensordot, trace, tril_indices, triu_indices, unique,
                               segment_reduce, unique_consecutive, var_mean, xlogy)
from .utils.dlpack import from_dlpack
from .linalg import (cholesky_inverse, cholesky_solve, logdet, lu_unpack, matrix_power,  # noqa: E402
                     triangular_solve)
from .linalg import det, inv as inverse, matrix_exp, pca_lowrank, svd_lowrank  # noqa: E402
from .linalg import _torch_cholesky as cholesky, _torch_slogdet as slogdet, _torch_svd as svd  # noqa: E402
from .linalg import pinverse, _torch_qr as qr  # noqa: E402

# ------------------------------------------------------------------ run at import
Tensor.__module__ = Size.__module__ = "tgrad"  # shown as tgrad.Tensor, as PyTorch shows torch.Tensor
float = float32
double = float64
cfloat = complex64
cdouble = complex128
half = float16
long = int64
int = int32
short = int16
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan
newaxis = None

__version__ = "0.1.0"
