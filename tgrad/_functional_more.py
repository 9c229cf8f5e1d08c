"""More ``tgrad.X`` functions, each a composition of Tensor ops (their gradients come from those ops):
cdist, pdist, diff, bincount, histc, unique, median/nanmedian/mode/kthvalue/quantile, std_mean/var_mean,
searchsorted/bucketize, cross, cartesian_prod, combinations, tril/triu_indices, block_diag, logspace, dist."""
import builtins
import itertools
import math
import warnings

import numpy as np

from . import dtypes as D
from . import return_types as R
from ._creation import arange, full, linspace, tensor, zeros
from ._einsum import complex_bilinear, einsum, kron, tensordot  # noqa: F401  (tgrad.einsum, Tensor.kron)
from ._functional import cat, meshgrid, stack
from ._functional import pow as pow_
from .autograd import dispatch as _dispatch
from .kernels import _stl
from .kernels.runtime import launcher as _L
from .ops import sort as _ops_sort
from .tensor import Size, Tensor


# ------------------------------------------------------------------ distances and differences
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p, (B, P, M) x (B, R, M) -> (B, P, R)."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.dim() < 2 else 2} got: "
                           f"{min(x1.dim(), x2.dim())}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 2:      # sqrt of a sum of squares, its gradient 0 where the distance is 0 (as PyTorch's cdist)
        sq = (diff * diff).sum(-1)
        zero = sq == 0
        return sq.masked_fill(zero, 1.0).sqrt().masked_fill(zero, 0.0)
    return diff.norm(p, -1)


def pdist(input, p=2):
    """out[k] = ||x[i] - x[j]||_p over the pairs i < j in row-major order, (N, M) -> (N (N - 1) / 2,)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    ij = triu_indices(n, n, 1, device=input.device)
    return cdist(input[ij[0]].unsqueeze(-2), input[ij[1]].unsqueeze(-2), p).reshape(-1)


def dist(input, other, p=2):
    """||input - other||_p over all elements (broadcast)."""
    return (input - other).norm(p)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """out[i] = x[i + 1] - x[i] along ``dim``, ``n`` times (after concatenating prepend/append)."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if prepend is not None or append is not None:
        parts = [t if isinstance(t, Tensor) else tensor(t, dtype=input.dtype, device=input.device)
                 for t in (prepend, input, append) if t is not None]
        input = cat([t.expand(tuple(input.shape[:dim % input.dim()]) + (-1,) + tuple(
            input.shape[dim % input.dim() + 1:])) if t.dim() == 0 else t for t in parts], dim)
    for _ in range(n):
        m = input.shape[dim]
        if m == 0:
            break
        a, b = input.narrow(dim, 1, m - 1), input.narrow(dim, 0, m - 1)
        input = a.logical_xor(b) if input.dtype is D.bool_ else a - b
    return input


def _trapezoid_dx(y, x, dim):
    """x_{i+1} - x_i along ``dim`` of y, x (N,) viewed along dim or x broadcast against y (ATen's rule)."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.dim() < y.dim():
        x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    n = x.shape[dim]
    return x.narrow(dim, 1, n - 1) - x.narrow(dim, 0, n - 1)


def _trapezoid_args(y, x, dx, dim, name):
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: x and dx are exclusive")
    if y.dim() == 0:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {dim})")
    return dim % y.dim()


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Trapezoidal rule along ``dim``: sum_i (x_{i+1} - x_i) (y_i + y_{i+1}) / 2, or with a constant spacing
    dx: (sum_i y_i - (y_0 + y_last) / 2) dx."""
    dim = _trapezoid_args(y, x, dx, dim, "trapezoid")
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim) * 0
    if x is not None:
        if not isinstance(x, Tensor):
            return trapezoid(y, dx=x, dim=dim)
        return (_trapezoid_dx(y, x, dim) * (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1))).sum(dim) / 2.0
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * (1 if dx is None else dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` under its NumPy name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Running trapezoidal integral along ``dim`` (one element fewer): cumsum((x_{i+1} - x_i) / 2 (y_i + y_{i+1}))."""
    dim = _trapezoid_args(y, x, dx, dim, "cumulative_trapezoid")
    n = y.shape[dim]
    pair = y.narrow(dim, 1, max(n - 1, 0)) + y.narrow(dim, 0, max(n - 1, 0))
    if isinstance(x, Tensor):
        step = _trapezoid_dx(y, x, dim) / 2.0
    else:
        step = (1 if dx is None and x is None else (x if dx is None else dx)) / 2.0
    return (step * pair).cumsum(dim)


def cross(input, other, dim=None):
    """The 3-vector cross product along ``dim`` (None: the first dim of size 3, deprecated in PyTorch)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                      "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
                      "agree with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        input, other = broadcast_tensors(input, other)
        dim = next((d for d, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim)


def _cross(input, other, dim):
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")
    a = [input.select(dim, i) for i in range(3)]
    b = [other.select(dim, i) for i in range(3)]
    return stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], dim)


# ------------------------------------------------------------------ counting
def bincount(input, weights=None, minlength=0):
    """out[v] = number of (or sum of ``weights`` at) entries equal to v, length max(max(input) + 1, minlength)."""
    _dispatch.check_meta("bincount", input)
    if input.dim() != 1 or input.dtype.is_floating_point or input.dtype is D.bool_:
        if input.dtype.is_floating_point:
            raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input.dtype.legacy_name}'")
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.numel() and int(input.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    n = max(int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        return zeros(n, dtype=D.int64, device=input.device).index_add_(0, input.long(), input.new_ones(
            input.shape, dtype=D.int64))
    dt = weights.dtype if weights.dtype.is_floating_point else D.float64
    return zeros(n, dtype=dt, device=input.device).index_add(0, input.long(), weights.to(dt))


def histc(input, bins=100, min=0, max=0):
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when min == max); values outside
    are ignored, the last bin includes max."""
    if bins <= 0:
        raise RuntimeError("torch.histc: bins must be > 0")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype.legacy_name}'")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = float(input.min()), float(input.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = input.detach().reshape(-1)
    inside = (x >= lo) & (x <= hi)
    idx = ((x - lo) * (bins / (hi - lo))).floor().long().clamp(0, bins - 1)
    return zeros(bins, dtype=input.dtype, device=input.device).index_add_(0, idx, inside.to(input.dtype))


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges): ``bins`` equal bins over ``range`` (the data's range, widened by 0.5 each way when
    it is one point) or the given edges; x counts in bin i when edges[i] <= x < edges[i+1] (the last bin
    includes its right edge), outside values are ignored; ``weight`` sums weights, ``density`` divides by
    total * width."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype.legacy_name}'")
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to(input.dtype)
    else:
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        else:
            lo, hi = (float(x.min()), float(x.max())) if x.numel() else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device)
    n = edges.numel() - 1
    idx = searchsorted(edges, x, right=True) - 1
    idx = idx.masked_fill(x == edges[-1], n - 1)
    inside = (idx >= 0) & (idx < n)
    w = weight.detach().reshape(-1).to(input.dtype) if weight is not None else x.new_ones(x.shape)
    hist = zeros(n, dtype=input.dtype, device=input.device).index_add_(0, idx.clamp(0, n - 1), w * inside)
    if density:
        hist = hist / (hist.sum() * edges.diff())
    res = R.histogram(hist, edges)
    if out is not None:
        out[0].copy_(hist)
        out[1].copy_(edges)
        return R.histogram(*out)
    return res


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges): a D-dimensional histogram of the points input[..., :D] (the last dim is D).  ``bins``:
    an int or D ints (equal bins over ``range`` = [lo0, hi0, lo1, hi1, ...], else each dim's data range, widened
    by 0.5 each way when it is one point) or D tensors of edges.  Bins are half-open [e_i, e_i+1), the last one
    closed; points outside any dim's edges are dropped; ``weight`` (one per point) sums weights; ``density``
    divides by total * cell volume."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype.legacy_name}'")
    d = input.shape[-1]
    x = input.detach().reshape(-1, d)
    if isinstance(bins, int):
        bins = [bins] * d
    if len(bins) != d:
        raise RuntimeError(f"histogramdd: expected {d} sequences of bin edges for each of the {d} dimensions of "
                           f"the input, but got {len(bins)}")
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"histogramdd: for a {d}-dimensional histogram range should have {2 * d} elements, but "
                           f"got {len(range)}")
    edges = []
    for k, b in enumerate(bins):
        if isinstance(b, Tensor):
            edges.append(b.to(input.dtype))
            continue
        if range is not None:
            lo, hi = float(range[2 * k]), float(range[2 * k + 1])
        else:
            col = x[:, k]
            lo, hi = (float(col.min()), float(col.max())) if x.shape[0] else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(linspace(lo, hi, int(b) + 1, dtype=input.dtype, device=input.device))
    sizes = [e.numel() - 1 for e in edges]
    flat = zeros(x.shape[0], dtype=D.int64, device=input.device)
    inside = x.new_ones(x.shape[0], dtype=D.bool_)
    for k, e in enumerate(edges):
        col = x[:, k].contiguous()
        n = sizes[k]
        idx = searchsorted(e, col, right=True) - 1
        idx = idx.masked_fill(col == e[-1], n - 1)
        inside = inside & (idx >= 0) & (idx < n)
        flat = flat * n + idx.clamp(0, max(n - 1, 0))
    w = weight.detach().reshape(-1).to(input.dtype) if weight is not None else x.new_ones(x.shape[0])
    total = math.prod(sizes)
    hist = zeros(total, dtype=input.dtype, device=input.device).index_add_(0, flat, w * inside).reshape(sizes)
    if density:
        vol = None
        for k, e in enumerate(edges):
            wk = e.diff().reshape([-1 if j == k else 1 for j in builtins.range(d)])
            vol = wk if vol is None else vol * wk
        hist = hist / (hist.sum() * vol)
    return R.histogramdd(hist, tuple(edges))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted ascending), with the index of each input element's value (same shape as
    input) and each value's count when asked.  ``dim`` given: the distinct slices along ``dim``."""
    _dispatch.check_meta("unique", input)
    if dim is not None:
        return _unique_dim(input, dim, return_inverse, return_counts)
    x = input.reshape(-1)
    s, order = x.sort(stable=True)
    new = cat([s.new_ones(min(1, s.numel()), dtype=D.bool_), s[1:] != s[:-1]]) if s.numel() else s.bool()
    values = s.masked_select(new)
    out = [values]
    if return_inverse:
        pos = new.long().cumsum(0) - 1
        inv = zeros(x.numel(), dtype=D.int64, device=x.device).scatter(0, order, pos)
        out.append(inv.reshape(input.shape))
    if return_counts:
        starts = new.nonzero().reshape(-1)
        ends = cat([starts[1:], tensor([x.numel()], device=x.device)]) if starts.numel() else starts
        out.append(ends - starts)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_dim(input, dim, return_inverse, return_counts):
    """unique over slices along ``dim``: the slices sorted lexicographically (host keys, device gather)."""
    dim = dim % max(input.dim(), 1)
    flat = input.movedim(dim, 0).reshape(input.shape[dim], -1)
    keys = flat.detach().cpu().numpy()
    _, first, inv, counts = np.unique(keys, axis=0, return_index=True, return_inverse=True, return_counts=True)
    values = input.index_select(dim, tensor(first, dtype=D.int64, device=input.device))
    out = [values]
    if return_inverse:
        out.append(tensor(inv.reshape(-1), dtype=D.int64, device=input.device))
    if return_counts:
        out.append(tensor(counts, dtype=D.int64, device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (flattened) to one."""
    _dispatch.check_meta("unique_consecutive", input)
    if dim is not None:
        raise NotImplementedError("tgrad.unique_consecutive: dim is not supported")
    x = input.reshape(-1)
    new = cat([x.new_ones(min(1, x.numel()), dtype=D.bool_), x[1:] != x[:-1]]) if x.numel() else x.bool()
    out = [x.masked_select(new)]
    if return_inverse:
        out.append((new.long().cumsum(0) - 1).reshape(input.shape))
    if return_counts:
        starts = new.nonzero().reshape(-1)
        out.append(cat([starts[1:], tensor([x.numel()], device=x.device)]) - starts if starts.numel() else starts)
    return out[0] if len(out) == 1 else tuple(out)


# ------------------------------------------------------------------ order statistics
def _select_sorted(input, dim, keepdim, pos, name):
    """(values, indices) of the element at sorted position ``pos`` along ``dim`` (stable order); the values
    are gathered from input so they carry its gradient."""
    if input.dim() == 0:
        return getattr(R, name)(input.clone(), zeros((), dtype=D.int64, device=input.device))
    _, order = input.sort(dim, stable=True)
    idx = order.narrow(dim, pos, 1)
    vals = input.gather(dim, idx)
    if not keepdim:
        vals, idx = vals.squeeze(dim), idx.squeeze(dim)
    return getattr(R, name)(vals, idx)


def _check_dim_size(input, dim, name):
    if input.dim() and input.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


def median(input, dim=None, keepdim=False):
    """The lower median (sorted position (n - 1) // 2), NaN (the first one) where a NaN is present; with
    ``dim``: (values, indices)."""
    return _median(input, dim, keepdim, "median")


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaNs: sorted position (k - 1) // 2 of the k non-NaN values (NaN where k = 0); with
    ``dim``: (values, indices)."""
    return _median(input, dim, keepdim, "nanmedian")


def _median(input, dim, keepdim, name):
    if dim is None:
        if input.numel() == 0:
            return full((), math.nan, dtype=input.dtype, device=input.device)
        return _median(input.reshape(-1), 0, False, name).values
    _check_dim_size(input, dim, name)
    if input.dim() == 0 or not input.dtype.is_floating_point:
        return _select_sorted(input, dim, keepdim, (input.shape[dim] - 1) // 2 if input.dim() else 0, name)
    nan = input.isnan()
    _, order = input.sort(dim, stable=True)                       # NaNs sort last
    if name == "median":
        idx = order.narrow(dim, (input.shape[dim] - 1) // 2, 1)
        idx = idx.where(~nan.any(dim, keepdim=True), nan.long().argmax(dim, keepdim=True))
    else:
        k = input.shape[dim] - nan.long().sum(dim, keepdim=True)
        idx = order.gather(dim, (k - 1).clamp_min(0) // 2)
    vals = input.gather(dim, idx)
    if not keepdim:
        vals, idx = vals.squeeze(dim), idx.squeeze(dim)
    return getattr(R, name)(vals, idx)


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element along ``dim`` (k counts from 1)."""
    n = input.shape[dim] if input.dim() else 1
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if input.dim() == 0 or _L.RECORD is not None:
        return _select_sorted(input, dim, keepdim, k - 1, "kthvalue")
    # ATen's cpu quick select returns one of tied k-th elements of its own choosing (kernels/_stl.py): rows where
    # the k-th value occurs more than once are redone on the host (not while a compiled step records)
    d = dim % input.dim()
    idx = input.sort(d, stable=True)[1].narrow(d, k - 1, 1)
    x = np.moveaxis(input.detach()._host_copy(), d, -1)
    i = np.moveaxis(idx._host_copy(), d, -1)
    xr, ir = x.reshape(-1, x.shape[-1]), i.reshape(-1).copy()
    kth = np.take_along_axis(xr, ir[:, None], 1)
    tied = ((xr == kth) | (np.isnan(xr) & np.isnan(kth) if input.dtype.is_floating_point else False)).sum(1) > 1
    if tied.any():
        for r in np.nonzero(tied)[0]:
            row = xr[r].astype(np.float64) if input.dtype.is_floating_point else xr[r]
            ir[r] = _stl.kthvalue_row(row.tolist(), k - 1)
        idx = tensor(np.moveaxis(ir.reshape(i.shape), -1, d).copy(), dtype=D.int64, device=input.device)
    vals = input.gather(d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return R.kthvalue(vals, idx)


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along ``dim`` (the smallest on a tie) and, as ATen's cpu kernel,
    the index its run ends on after ``std::sort`` (host, up to ops/sort.py's HOST_LIMIT elements and not while
    a compiled step records; else the index of its last occurrence)."""
    if input.dim() == 0:
        return R.mode(input.clone(), zeros((), dtype=D.int64, device=input.device))
    _check_dim_size(input, dim, "mode")
    x = input.movedim(dim, -1)
    if _L.RECORD is None and input.numel() <= _ops_sort.HOST_LIMIT:
        # ATen's index: the last of the mode's run as std::sort leaves equal values (kernels/_stl.py), on the host
        h = x.detach()._host_copy()
        rows = h.reshape(-1, h.shape[-1])
        if input.dtype.is_floating_point:
            rows = rows.astype(np.float64)
        i = np.array([_stl.mode_row(r.tolist()) for r in rows], np.int64).reshape(h.shape[:-1] + (1,))
        idx = tensor(i, dtype=D.int64, device=input.device)
        vals = x.gather(-1, idx)
        vals, idx = vals.movedim(-1, dim), idx.movedim(-1, dim)
        if not keepdim:
            vals, idx = vals.squeeze(dim), idx.squeeze(dim)
        return R.mode(vals, idx)
    s, order = x.detach().sort(-1, stable=True)
    count = (s.unsqueeze(-1) == s.unsqueeze(-2)).sum(-1)          # (..., n): how often s[j] occurs
    best = count.amax(-1, keepdim=True)
    first = (count == best).long().argmax(-1, keepdim=True)       # the smallest value with the top count
    idx = order.gather(-1, first + best - 1)                      # its last occurrence in the input
    vals = x.gather(-1, idx)
    vals, idx = vals.movedim(-1, dim), idx.movedim(-1, dim)
    if not keepdim:
        vals, idx = vals.squeeze(dim), idx.squeeze(dim)
    return R.mode(vals, idx)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-quantiles along ``dim`` (all elements when None) from the sorted values; ``interpolation``:
    linear, lower, higher, midpoint or nearest between the two neighbouring ranks.  A tensor q adds a
    leading dim.  A row holding NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile over the non-NaN values of each row (NaN for an all-NaN row)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    # ATen's quantile_compute: ranks q * (n - 1) in the input's dtype (n = the row's non-NaN count for
    # nanquantile; the last index for a row holding NaN in quantile), then gather + lerp.
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    qs = q if isinstance(q, Tensor) else tensor(q, dtype=input.dtype, device=input.device)
    if qs.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if qs.dtype != input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if any(not 0 <= v <= 1 for v in qs.detach().reshape(-1).tolist()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if dim is None:
        x = input.reshape(-1)
    else:
        d = dim % max(input.dim(), 1)
        x = input.reshape(1) if input.dim() == 0 else input.movedim(d, -1)
    if x.shape[-1] == 0:
        raise IndexError(f"{name}() input tensor must be non-empty")
    s = x.sort(-1)[0]
    nq = qs.numel()
    qv = qs.detach().reshape((nq,) + (1,) * s.dim())                    # (nq, ..., 1) against (..., n)
    nan = s.isnan()
    if ignore_nan:
        ranks = qv * ((~nan).sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        last = s.shape[-1] - 1
        ranks = (qv * last).masked_fill(nan.any(-1, keepdim=True), last)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    s = s.expand((nq,) + tuple(s.shape))
    below = ranks.long()
    r = s.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        w = ranks.new_full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
        r = r.lerp(s.gather(-1, ranks.ceil().long()), w)
    r = r.squeeze(-1)                                                   # (nq, ...reduced shape)
    if keepdim and dim is None:
        r = r.reshape((nq,) + (1,) * input.dim())
    elif keepdim and input.dim():
        r = r.unsqueeze(d + 1)
    return r if qs.dim() == 1 else r.squeeze(0)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over ``dim``."""
    return (input.std(dim, unbiased, keepdim, correction=correction), _mean(input, dim, keepdim))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over ``dim``."""
    return (input.var(dim, unbiased, keepdim, correction=correction), _mean(input, dim, keepdim))


def _mean(input, dim, keepdim):
    return input.mean() if dim is None and not keepdim else input.mean(
        tuple(range(input.dim())) if dim is None else dim, keepdim)


# ------------------------------------------------------------------ searching
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """For each value, the index in the sorted last dim where it would be inserted: the number of elements
    < value (left) or <= value (right / side='right')."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    scalar = not isinstance(input, Tensor)
    v = tensor(input, dtype=sorted_sequence.dtype, device=sorted_sequence.device) if scalar else input
    if sorted_sequence.dim() > 1 and tuple(sorted_sequence.shape[:-1]) != tuple(v.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor "
                           f"{list(v.shape)}")
    seq = sorted_sequence.detach()
    vv = v.detach().unsqueeze(-1)
    if sorted_sequence.dim() > 1:
        seq = seq.unsqueeze(-2)
    hit = (seq <= vv) if right else (seq < vv)
    res = hit.sum(-1).to(D.int32 if out_int32 else D.int64)
    return res if out is None else out.copy_(res)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value: i with boundaries[i-1] < x <= boundaries[i] (right: boundaries[i-1] <= x <
    boundaries[i])."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# ------------------------------------------------------------------ building tensors
def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor: (prod n_i, k) (one tensor: itself)."""
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the 1-D ``input``'s elements, in itertools' order: (count, r)."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    return stack([input[tensor(idx[:, j], device=input.device)] for j in range(r)], 1)


def _tri_indices(row, col, offset, lower, dtype, device):
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return tensor(np.stack([r, c]).astype(np.int64).reshape(2, -1), dtype=dtype or D.int64, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """(2, N): the row and column indices of the lower triangle (diagonal ``offset``) of a row x col matrix."""
    return _tri_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """(2, N): the row and column indices of the upper triangle (diagonal ``offset``) of a row x col matrix."""
    return _tri_indices(row, col, offset, False, dtype, device)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) placed along the diagonal of one matrix, zeros elsewhere."""
    mats = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in tensors]
    for i, t in enumerate(mats):
        if t.dim() != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    if not mats:
        return zeros(1, 0)
    dt = mats[0].dtype
    for t in mats[1:]:
        dt = D.promote_types(dt, t.dtype)
    ncol = sum(t.shape[1] for t in mats)
    rows, c = [], 0
    for t in mats:
        rows.append(cat([t.new_zeros(t.shape[0], c, dtype=dt), t.to(dt),
                         t.new_zeros(t.shape[0], ncol - c - t.shape[1], dtype=dt)], 1))
        c += t.shape[1]
    return cat(rows, 0)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None):
    """base ** linspace(start, end, steps)."""
    e = linspace(start, end, steps, dtype=D.float64, device=device)
    res = (base ** e).to(dtype or D.get_default_dtype())
    res.requires_grad_(requires_grad)
    return res if out is None else out.copy_(res)


# ------------------------------------------------------------------ small element-wise extras
def logit(input, eps=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given."""
    x = input if eps is None else input.clamp(eps, 1 - eps)
    return (x / (1 - x)).log()


def xlogy(input, other):
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    if not isinstance(input, Tensor):
        input = tensor(input, dtype=other.dtype if other.dtype.is_floating_point else D.get_default_dtype(),
                       device=other.device)
    if not isinstance(other, Tensor):
        other = tensor(other, dtype=input.dtype if input.dtype.is_floating_point else D.get_default_dtype(),
                       device=input.device)
    if not input.dtype.is_floating_point:
        input = input.to(D.promote_types(other.dtype, D.get_default_dtype()) if not other.dtype.is_floating_point
                         else other.dtype)
    # ATen's xlogy kernel calls the scalar std::log: a float32 log correctly rounded (from float64 here)
    log = other.log() if other.dtype != D.float32 else other.to(D.float64).log().to(D.float32)
    res = input * log
    return res.masked_fill((input == 0) & ~other.isnan(), 0.0)


# ------------------------------------------------------------------ small reductions and membership


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (all elements when None)."""
    if dim is None:
        lo, hi = input.amin(), input.amax()
        if keepdim:
            lo, hi = lo.reshape((1,) * input.dim()), hi.reshape((1,) * input.dim())
        return R.aminmax(lo, hi)
    return R.aminmax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element occurs in ``test_elements``."""
    if not isinstance(elements, Tensor):
        elements = tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = tensor(test_elements, device=elements.device)
    hit = (elements.unsqueeze(-1) == test_elements.reshape(-1)).any(-1)
    return ~hit if invert else hit


# ------------------------------------------------------------------ linear-algebra and layout helpers
def trace(input):
    """The sum of the main diagonal of a matrix."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


def diagflat(input, offset=0):
    """The flattened input on diagonal ``offset`` of a square matrix."""
    return input.reshape(-1).diag(offset)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    res = (input * beta if beta != 1 else input) + (mat.mv(vec) * alpha if alpha != 1 else mat.mv(vec))
    return res if out is None else out.copy_(res)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    o = vec1.outer(vec2)
    res = (input * beta if beta != 1 else input) + (o * alpha if alpha != 1 else o)
    return res if out is None else out.copy_(res)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum_b batch1[b] @ batch2[b]."""
    s = batch1.bmm(batch2).sum(0)
    res = (input * beta if beta != 1 else input) + (s * alpha if alpha != 1 else s)
    return res if out is None else out.copy_(res)


# ------------------------------------------------------------------ float64 power, diagonal fill


def float_power(input, exponent):
    """x ** y in float64."""
    if isinstance(exponent, Tensor):
        exponent = exponent.double()
    return input.double().pow(exponent) if isinstance(input, Tensor) else tensor(float(input)).double().pow(exponent)


def fill_diagonal_(input, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal in place (all dims equal, or a tall matrix: ``wrap`` restarts
    the diagonal every cols + 1 rows)."""
    if input.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.dim() > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(input.shape)
    if input.dim() == 2 and wrap and input.shape[0] > input.shape[1] + 1:
        step = input.shape[1] + 1
        flat = np.arange(0, input.numel(), step)
    else:
        stride = sum(int(np.prod(input.shape[d + 1:])) for d in range(input.dim()))
        flat = np.arange(n) * stride
    idx = tensor(flat, dtype=D.int64, device=input.device)
    with_grad = input.reshape(-1) if input.is_contiguous() else None
    if with_grad is None:
        raise NotImplementedError("tgrad: fill_diagonal_ of a non-contiguous tensor is not supported")
    with_grad.index_fill_(0, idx, fill_value)
    return input


# ------------------------------------------------------------------ composites (bodies in Tensor's methods)
def _method_fn(name):
    def f(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``tgrad.{name}(input, ...)``: the same as ``input.{name}(...)``."
    return f


isclose = _method_fn("isclose")
allclose = _method_fn("allclose")
count_nonzero = _method_fn("count_nonzero")
nansum = _method_fn("nansum")
nanmean = _method_fn("nanmean")
tensor_split = _method_fn("tensor_split")
hsplit = _method_fn("hsplit")
vsplit = _method_fn("vsplit")
dsplit = _method_fn("dsplit")
rot90 = _method_fn("rot90")
logaddexp = _method_fn("logaddexp")
logaddexp2 = _method_fn("logaddexp2")
hypot = _method_fn("hypot")
deg2rad = _method_fn("deg2rad")
rad2deg = _method_fn("rad2deg")
sgn = _method_fn("sgn")
signbit = _method_fn("signbit")
positive = _method_fn("positive")
fmax = _method_fn("fmax")
fmin = _method_fn("fmin")
heaviside = _method_fn("heaviside")
copysign = _method_fn("copysign")
is_nonzero = _method_fn("is_nonzero")
is_same_size = _method_fn("is_same_size")
is_signed = _method_fn("is_signed")
conj = _method_fn("conj")
resolve_conj = _method_fn("resolve_conj")
resolve_neg = _method_fn("resolve_neg")
conj_physical = _method_fn("conj_physical")
is_conj = _method_fn("is_conj")
is_neg = _method_fn("is_neg")
detach = _method_fn("detach")


def is_complex(input):
    return input.is_complex()


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (ints count as 1-d shapes), as ``tgrad.Size``; PyTorch's error
    names the first dimension that does not broadcast."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes if s is not None]
    common = [1] * max((len(s) for s in shapes), default=0)
    for k, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i] or shape[i] == 1:
                continue
            if common[i] == 1:
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            else:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching "
                                   f"argument at index {k} had {shape}; but expected shape should be broadcastable "
                                   f"to {common}")
    return Size(common)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


def result_type(tensor, other):
    return D.result_type(tensor, other)


# ------------------------------------------------------------ predicates, scatters into slices, statistics
def isposinf(input):
    return input == math.inf if input.is_floating_point() else zeros(input.shape, dtype=D.bool_, device=input.device)


def isneginf(input):
    return input == -math.inf if input.is_floating_point() else zeros(input.shape, dtype=D.bool_, device=input.device)


def isreal(input):
    """True everywhere: tgrad has no complex dtypes."""
    return full(input.shape, True, dtype=D.bool_, device=input.device)


def index_copy(input, dim, index, source):
    """input with ``input.select(dim, index[i]) = source.select(dim, i)`` (a scatter along dim)."""
    if index.dim() > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got " + str(index.dim()) + ")")
    d = dim % max(input.dim(), 1)
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = -1
    idx = index.reshape(shape).expand(source.shape) if source.dim() else index.reshape(())
    return input.scatter(d, idx, source)


def _scatter_into(input, src, view):
    """input with ``view(input)`` replaced by src: a clone's view copied into (gradients: input's outside the view,
    src's from the view, as PyTorch's *_scatter ops)."""
    out = input.clone()
    v = view(out)
    if tuple(v.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(v.shape)}")
    v.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    sl = [slice(None)] * input.dim()
    sl[dim] = slice(start, end, step)
    return _scatter_into(input, src, lambda t: t[tuple(sl)])


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def adjoint(input):
    """The conjugate transpose of the last two dimensions (the transpose: tgrad has no complex dtypes)."""
    return input.transpose(-2, -1)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations), as ATen computes it:
    avg = sum(x w) / sum(w), c = (x - avg) @ ((x - avg) w)ᵀ / (sum(w) - correction [· sum(w aw) / sum(w)])."""
    if input.dim() > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    w_sum = w.sum() if w is not None else n
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is None:
        norm = float(n - correction)
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    elif fweights is None and n == 1 and correction == 1:
        norm = 0.0
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", stacklevel=2)
        norm = norm * 0 if isinstance(norm, Tensor) else 0.0
    x = x - avg.unsqueeze(1)
    return (x.mm((x * w if w is not None else x).t()) / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients: cov(x) / sqrt(diag ⊗ diag), clipped to [-1, 1]."""
    if input.dim() > 2:
        raise ValueError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.reshape(-1, 1)
    c = c / stddev.reshape(1, -1)
    return c.clip(-1, 1)


# ------------------------------------------------------------ window functions (ATen's op order)
def _window(name, window_length, periodic, dtype, layout, device, requires_grad, body):
    """The checks, the length-0/1 windows and the periodic cut shared by the window functions: ``body(x, n)``
    makes the symmetric window of n points from x = arange(n)."""
    if layout is not None and getattr(layout, "name", None) != "strided":
        raise NotImplementedError(f"{name}: only the strided layout is supported, got {layout}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        return full((window_length,), 1.0, dtype=dtype, device=device).requires_grad_(requires_grad)
    n = window_length + 1 if periodic else window_length     # periodic: N + 1 points without the last
    w = body(arange(n, dtype=D.get_default_dtype() if dtype is None else dtype, device=device), n)
    return (w[:-1] if periodic else w).contiguous().requires_grad_(requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """alpha - beta cos(2 pi n / (N - 1)), n < N."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda x, n: x.mul_(math.pi * 2.0 / (n - 1)).cos_().mul_(-beta).add_(alpha))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)): hamming_window with alpha = beta = 1/2."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda x, n: x.mul_(math.pi * 2.0 / (n - 1)).cos_().mul_(-0.5).add_(0.5))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """I0(beta sqrt|1 - ((n - a) / a)^2|) / I0(beta), a = (N - 1) / 2, in the window's dtype (ATen's cpu
    kernel: PyTorch's bits)."""
    def body(x, n):
        w = _dispatch.call("kaiser_window_values", x, beta=beta)
        return w.div_(full((), beta, dtype=w.dtype, device=w.device).i0())
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, body)


def _bartlett(x, n):
    """1 - |2n / (N - 1) - 1| (ATen: 2n / (N - 1), then 2 - that on the second half)."""
    x = x.mul_(2.0 / (n - 1))
    first_half = (n - 1) >> 1
    x[first_half + 1:] = 2 - x[first_half + 1:]
    return x


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, _bartlett)


def _blackman(x, n):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    x = x.mul_(math.pi / (n - 1))
    return x.mul(4).cos_().mul_(0.08) - x.mul(2).cos_().mul_(0.5) + 0.42


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, _blackman)


def ldexp(input, other):
    """input · 2^other (ATen's composite: ``input * pow(2.0, other)``)."""
    return input * pow_(2.0, other)


def sinc(input):
    """sin(pi x) / (pi x), 1 at x = 0 (its derivative there is 0)."""
    x = input if input.is_floating_point() else input.to(D.get_default_dtype())
    zero = x == 0
    px = x.masked_fill(zero, 1.0) * math.pi
    return (px.sin() / px).masked_fill(zero, 1.0)


# ------------------------------------------------------------------ fake quantization (quantization-aware training)
def _fake_quantize(input, scale, zero_point, quant_min, quant_max):
    """(clamp(nearbyint(x * (1 / scale)) + zp, qmin, qmax) - zp) * scale in float32 (ATen's cpu kernel); the
    gradient passes where the unclamped level lies in [qmin, qmax] (straight-through), zero elsewhere."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"fake_quantize_tensor_cachemask_kernel_type_handling" not implemented for '
                                  f"'{input.dtype.legacy_name}'")
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")
    inv = (1.0 / scale.float()) if isinstance(scale, Tensor) else float(np.float32(1.0) / np.float32(scale))
    q = (input.detach() * inv).round() + zero_point
    keep = (q >= quant_min) & (q <= quant_max)
    out = (q.clamp(quant_min, quant_max) - zero_point) * scale
    return out.to(input.dtype) + (input - input.detach()) * keep if input.requires_grad else out.to(input.dtype)


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Fake-quantize ``input`` with one (scale, zero_point): floats, or one-element tensors."""
    zp = zero_point.item() if isinstance(zero_point, Tensor) else zero_point
    if quant_min <= quant_max and not quant_min <= zp <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    if isinstance(scale, Tensor):
        scale = scale.reshape(())
    return _fake_quantize(input, scale, int(zp), quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Fake-quantize ``input`` with a (scale, zero_point) per index of dim ``axis`` (scale, zero_point 1-D)."""
    if zero_point.dtype not in (D.int32, D.float32, D.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {zero_point.dtype.legacy_name}")
    if scale.dim() != 1 or zero_point.dim() != 1 or scale.numel() != zero_point.numel() or \
            scale.numel() != input.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    if quant_min <= quant_max and bool(((zero_point < quant_min) | (zero_point > quant_max)).any()):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    shape = [1] * input.dim()
    shape[axis] = -1
    return _fake_quantize(input, scale.float().reshape(shape), zero_point.round().float().reshape(shape), quant_min,
                          quant_max)


# ------------------------------------------------------------------ complex numbers (ops/complex.py)
def view_as_real(input):
    """The (..., 2) float view of a complex tensor (real and imaginary parts, sharing its storage)."""
    return _dispatch.call("view_as_real", input)


def view_as_complex(input):
    """The complex view of a float (..., 2) tensor whose last dim has stride 1 (sharing its storage)."""
    return _dispatch.call("view_as_complex", input)


def complex(real, imag, *, out=None):
    """real + imag i of two float tensors of one dtype (float32 -> complex64, float64 -> complex128)."""
    r = _dispatch.call("complex", real, imag)
    return r if out is None else out.copy_(r)


def polar(abs, angle, *, out=None):
    """abs * (cos(angle) + i sin(angle))."""
    r = _dispatch.call("polar", abs, angle)
    return r if out is None else out.copy_(r)


def real(input):
    return input.real


def imag(input):
    return input.imag


angle = _method_fn("angle")


_SEGMENT_REDUCE = {"sum": "sum", "prod": "prod", "mean": "mean", "max": "amax", "amax": "amax", "min": "amin",
                   "amin": "amin"}


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce consecutive segments of ``data`` along ``axis`` (segment i: ``lengths[i]`` rows, or rows
    offsets[i]:offsets[i+1]); an empty segment gives ``initial``, else sum 0, prod 1, max -inf, min inf, mean
    nan; with ``initial`` every segment also reduces it (mean: (initial + sum) / length).  1-d lengths/offsets."""
    if reduce not in _SEGMENT_REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for "
                                  f"'{D.TENSOR_TYPE_NAMES[data.dtype][:-6]}'")
    if lengths is None:
        lengths = offsets[1:] - offsets[:-1]
    if lengths.dim() != 1:
        raise NotImplementedError("tgrad: segment_reduce with lengths/offsets of more than one dim is not supported")
    ax = axis + data.dim() if axis < 0 else axis
    if ax != lengths.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if not unsafe and int(lengths.sum()) != data.shape[0]:
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    red = _SEGMENT_REDUCE[reduce]
    n = lengths.shape[0]
    seg = arange(n, device=data.device).repeat_interleave(lengths.to(D.int64))
    shape = (n,) + tuple(data.shape[1:])
    start = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}[red]
    base = full(shape, start if initial is None else initial, dtype=data.dtype, device=data.device)
    if red in ("sum", "mean"):
        out = base.index_add(0, seg, data)
    else:
        with warnings.catch_warnings():         # (index_reduce's beta warning is not segment_reduce's)
            warnings.simplefilter("ignore", UserWarning)
            out = base.index_reduce(0, seg, data, red, include_self=True)
    if red == "mean":
        count = lengths.to(data.dtype).reshape((n,) + (1,) * (data.dim() - 1))
        out = out / count
        if initial is not None:
            out = out.masked_fill(count == 0, initial)
    return out
