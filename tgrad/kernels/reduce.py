"""Reduction and scan kernels over the last axis of a strided (M, K) view.

A reduction over any set of dims is a reduction over K of an (M, K) view:
row ``m`` splits as ``(m // M2, m % M2)`` over two merged groups of kept dims
with strides ``stride_m1``/``stride_m2``, and the reduced dims are merged
into one stride ``stride_k`` (the ops layer makes a contiguous copy first
when that is impossible).  Outputs are contiguous: ``out[m]``.
"""
import triton
import triton.language as tl

from .runtime import launcher as T
from .runtime import Launch, Sites, cdiv, gpu_blocks, launch, next_pow2
from ._lang import cast_store, compute_type, kptr


# accumulate_rows_kernel OP codes (one pass; SUM and PROD also name scan_rows_kernel's two scans)
SUM = tl.constexpr(0)
PROD = tl.constexpr(1)
ALL = tl.constexpr(4)
ANY = tl.constexpr(5)
NORM1 = tl.constexpr(6)
NORM2 = tl.constexpr(7)
NORMP = tl.constexpr(8)
NORM0 = tl.constexpr(10)
MEAN = tl.constexpr(14)
# centered_rows_kernel OP codes (two passes)
LSE = tl.constexpr(11)
VAR = tl.constexpr(12)
STD = tl.constexpr(13)
ACCUMULATE = {"sum": 0, "prod": 1, "all": 4, "any": 5, "norm1": 6, "norm2": 7, "normp": 8, "norm0": 10, "mean": 14}
CENTERED = {"logsumexp": 11, "var": 12, "std": 13}
EXTREMUM = {"max": (False, False), "min": (True, False), "norminf": (False, True), "normneginf": (True, True)}

# tie_weights_kernel MODE codes
EQ = tl.constexpr(0)
ABS_EQ = tl.constexpr(1)
ONEHOT = tl.constexpr(2)
SIGN = tl.constexpr(3)
EQ_STRICT = tl.constexpr(7)
# prod_grad_kernel MODE codes
PROD_OTHERS = tl.constexpr(4)
BEFORE_ZERO = tl.constexpr(5)
FIRST_ZERO = tl.constexpr(6)
TIE_WEIGHTS = {"eq": 0, "abs_eq": 1, "onehot": 2, "sign": 3, "eq_strict": 7}
PROD_GRAD = {"prod_others": 4, "before_zero": 5, "first_zero": 6}


@triton.jit
def _row_prod(acc, BLOCK_K: tl.constexpr):
    """Product along axis 1 of a [ROWS, BLOCK_K] block, as the last column of its cumprod.

    (tl.reduce with a multiply combine runs element by element in the interpreter; the
    built-in scan and sum do not.)
    """
    last = tl.arange(0, BLOCK_K) == BLOCK_K - 1
    return tl.sum(tl.where(last[None, :], tl.cumprod(acc, axis=1), 0), axis=1)


@triton.jit
def _row_base(rows, M2, stride_m1, stride_m2):
    return (rows // M2) * stride_m1 + (rows % M2) * stride_m2


@triton.jit
def extremum_rows_kernel(x_ptr, out_ptr, idx_ptr, M, M2, K, stride_m1, stride_m2, stride_k, fill,
                         MIN: tl.constexpr, ABS: tl.constexpr, WITH_INDEX: tl.constexpr, IS_FLOAT: tl.constexpr,
                         COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[m] = max_k (MIN: min_k) x[m, k] (ABS: of |x|, the inf-norms) of a strided (M, K) view, idx[m] its
    first position; a NaN wins (and its first position); ``fill``: the identity.  out, idx hold M elements."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    best = tl.full([ROWS], fill, COMPUTE)
    bidx = tl.zeros([ROWS], dtype=tl.int64)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if ABS:
            x = tl.abs(x)
        v = tl.where(m, x, fill)
        if IS_FLOAT:
            isn = v != v
            v = tl.where(isn, fill, v)
        if MIN:
            cv = tl.min(v, axis=1)
            take = cv < best
            if WITH_INDEX:
                ci = tl.argmin(v, axis=1, tie_break_left=True)
        else:
            cv = tl.max(v, axis=1)
            take = cv > best
            if WITH_INDEX:
                ci = tl.argmax(v, axis=1, tie_break_left=True)
        if IS_FLOAT:
            nan_any = tl.max(isn.to(tl.int32), axis=1) > 0
            cv = tl.where(nan_any, float("nan"), cv)
            take = (take | nan_any) & (best == best)
            if WITH_INDEX:
                ci = tl.where(nan_any, tl.argmax(isn.to(tl.int32), axis=1, tie_break_left=True), ci)
        best = tl.where(take, cv, best)
        if WITH_INDEX:
            bidx = tl.where(take, ci.to(tl.int64) + k0, bidx)
    cast_store(out_ptr + rows, best, rmask)
    if WITH_INDEX:
        tl.store(idx_ptr + rows, bidx, mask=rmask)


@triton.jit
def centered_rows_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k, dof,
                         OP: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Two passes over each row of a strided (M, K) view: c = max (LSE) / mean (VAR, STD), then
    out[m] = log sum exp(x - c) + c, or sum (x - c)^2 / dof (its sqrt for STD).  out holds M elements."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
    if OP == LSE:
        acc += float("-inf")
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if OP == LSE:
            acc = tl.maximum(acc, tl.where(m, x, float("-inf")))
        else:
            acc += x
    if OP == LSE:
        c = tl.max(acc, axis=1)
        c = tl.where((c == float("inf")) | (c == float("-inf")), 0.0, c)
    else:
        c = tl.sum(acc, axis=1) / K
    acc2 = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if OP == LSE:
            acc2 += tl.where(m, tl.exp(x - c[:, None]), 0.0)
        else:
            d = tl.where(m, x - c[:, None], 0.0)
            acc2 += d * d
    s = tl.sum(acc2, axis=1)
    if OP == LSE:
        r = tl.log(s) + c
    else:
        r = s / dof
        if OP == STD:
            r = tl.sqrt(r)
    cast_store(out_ptr + rows, r, rmask)


@triton.jit
def accumulate_rows_kernel(x_ptr, out_ptr, y_ptr, M, M2, K, stride_m1, stride_m2, stride_k, p,
                           stride_ym1, stride_ym2, stride_yk,
                           OP: tl.constexpr, MUL: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr,
                           BLOCK_K: tl.constexpr):
    """out[m] = OP_k x[m, k] in one pass over a strided (M, K) view: sum, mean, prod, all, any, the p-norms
    (p: the order); MUL (OP == SUM): sum_k x[m, k] * y[m, k], y a second (M, K) view.  out holds M elements."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if OP == PROD:
        acc = tl.full([ROWS, BLOCK_K], 1, COMPUTE)
    elif OP == ALL:
        acc = tl.full([ROWS, BLOCK_K], 1, tl.int32)
    elif OP == ANY:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=tl.int32)
    else:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
    if MUL:
        ybase = _row_base(rows, M2, stride_ym1, stride_ym2)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if MUL:
            y = tl.load(y_ptr + ybase[:, None] + cols[None, :] * stride_yk, mask=m, other=0).to(COMPUTE)
            # the where keeps the product a rounded value of its own (no multiply-add contraction on GPUs)
            acc += tl.where(m, x * y, 0)
        elif OP == SUM or OP == MEAN:
            acc += x
        elif OP == PROD:
            acc *= tl.where(m, x, 1)
        elif OP == ALL:
            acc = tl.minimum(acc, tl.where(m, (x != 0).to(tl.int32), 1))
        elif OP == ANY:
            acc = tl.maximum(acc, (x != 0).to(tl.int32))
        elif OP == NORM1:
            acc += tl.abs(x)
        elif OP == NORM2:
            acc += x * x
        elif OP == NORM0:
            acc += (x != 0).to(COMPUTE)
        else:  # NORMP: |x|^p, 0 at x == 0
            a = tl.abs(x)
            acc += tl.where(a == 0, 0.0, tl.exp(p * tl.log(a)))
    if OP == PROD:
        r = _row_prod(acc, BLOCK_K)
    elif OP == ALL:
        r = tl.min(acc, axis=1)
    elif OP == ANY:
        r = tl.max(acc, axis=1)
    else:
        r = tl.sum(acc, axis=1)
        if OP == MEAN:
            r = r / K
        elif OP == NORM2:
            r = tl.sqrt(r)
        elif OP == NORMP:
            r = tl.where(r == 0, 0.0, tl.exp(tl.log(r) / p))
    cast_store(out_ptr + rows, r, rmask)


@triton.jit
def scan_rows_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                     OP: tl.constexpr, REVERSE: tl.constexpr, COMPUTE: tl.constexpr,
                     ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """out[m, k] = sum (OP=SUM) or product (OP=PROD) of x[m, :k+1] (REVERSE: of x[m, k:]).

    x and out share the strides of an (M, K) view; chunks of BLOCK_K carry the running total.
    """
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if OP == SUM:
        carry = tl.zeros([ROWS], dtype=COMPUTE)
    else:
        carry = tl.full([ROWS], 1, COMPUTE)
    nchunks = tl.cdiv(K, BLOCK_K)
    for i in range(0, nchunks):
        if REVERSE:
            k0 = (nchunks - 1 - i) * BLOCK_K
        else:
            k0 = i * BLOCK_K
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        offs = base[:, None] + cols[None, :] * stride_k
        x = tl.load(x_ptr + offs, mask=m, other=0).to(COMPUTE)
        if OP == SUM:
            c = tl.cumsum(x, axis=1, reverse=REVERSE) + carry[:, None]
            carry += tl.sum(x, axis=1)
        else:
            x = tl.where(m, x, 1)
            c = tl.cumprod(x, axis=1, reverse=REVERSE) * carry[:, None]
            carry *= _row_prod(x, BLOCK_K)
        cast_store(out_ptr + offs, c, m)


@triton.jit
def tie_weights_kernel(x_ptr, v_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                       MODE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Gradient weights w[m, k] (contiguous (M, K)) of a strided (M, K) view x, constant w.r.t. x: EQ (x == v[m]) /
    count (ties share; NaN == NaN), EQ_STRICT (IEEE ==: 0/0 on a NaN row), ABS_EQ sign(x) (|x| == v[m]) / count,
    ONEHOT (k == v[m]), SIGN sign(x)."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if MODE == ONEHOT:
        v = tl.load(v_ptr + rows, mask=rmask, other=0).to(tl.int64)
    elif MODE != SIGN:
        v = tl.load(v_ptr + rows, mask=rmask, other=0).to(COMPUTE)
    cnt = tl.zeros([ROWS], dtype=COMPUTE)
    if MODE == EQ or MODE == EQ_STRICT or MODE == ABS_EQ:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            if MODE == ABS_EQ:
                x = tl.abs(x)
            hit = x == v[:, None]
            if MODE != EQ_STRICT:
                hit = hit | ((x != x) & (v[:, None] != v[:, None]))
            acc += tl.where(m & hit, 1.0, 0.0)
        cnt = tl.sum(acc, axis=1)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        if MODE == ONEHOT:
            w = tl.where(cols[None, :] == v[:, None], 1.0, 0.0)
        else:
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            sgn = tl.where(x > 0, 1.0, tl.where(x < 0, -1.0, 0.0))
            if MODE == SIGN:
                w = sgn
            else:
                if MODE == ABS_EQ:
                    a = tl.abs(x)
                else:
                    a = x
                hit = a == v[:, None]
                if MODE != EQ_STRICT:
                    hit = hit | ((a != a) & (v[:, None] != v[:, None]))
                w = tl.where(hit, 1.0 / cnt[:, None], 0.0)
                if MODE == EQ_STRICT:
                    w = tl.where(cnt[:, None] == 0, float("nan"), w)
                if MODE == ABS_EQ:
                    w = w * sgn
        cast_store(out_ptr + rows[:, None] * K + cols[None, :], w, m)


@triton.jit
def prod_grad_kernel(x_ptr, out_ptr, M, M2, K, stride_m1, stride_m2, stride_k,
                     MODE: tl.constexpr, COMPUTE: tl.constexpr, ROWS: tl.constexpr, BLOCK_K: tl.constexpr):
    """Weights w[m, k] (contiguous (M, K)) of prod/cumprod backward over a strided (M, K) view x: PROD_OTHERS
    prod_{j != k} x[m, j] (no division), BEFORE_ZERO no zero in x[m, :k+1], FIRST_ZERO x[m, k] is the first zero."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = _row_base(rows, M2, stride_m1, stride_m2)
    if MODE == PROD_OTHERS:
        acc = tl.zeros([ROWS, BLOCK_K], dtype=COMPUTE)
        pacc = tl.full([ROWS, BLOCK_K], 1, COMPUTE)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            m = rmask[:, None] & (cols[None, :] < K)
            x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
            acc += tl.where(m & (x == 0), 1.0, 0.0)
            pacc *= tl.where(m & (x != 0), x, 1.0)
        cnt = tl.sum(acc, axis=1)
        nzp = _row_prod(pacc, BLOCK_K)
    seen = tl.zeros([ROWS], dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        m = rmask[:, None] & (cols[None, :] < K)
        x = tl.load(x_ptr + base[:, None] + cols[None, :] * stride_k, mask=m, other=0).to(COMPUTE)
        if MODE == PROD_OTHERS:
            # one zero: only its position sees the product of the others; two or more: all 0
            w = tl.where(x == 0, tl.where(cnt[:, None] == 1, nzp[:, None], 0.0),
                         tl.where(cnt[:, None] == 0, nzp[:, None] / x, 0.0))
        else:
            z = (m & (x == 0)).to(tl.int32)
            cz = tl.cumsum(z, axis=1) + seen[:, None]
            seen += tl.sum(z, axis=1)
            if MODE == BEFORE_ZERO:
                w = tl.where(cz == 0, 1.0, 0.0)
            else:
                w = tl.where((z == 1) & (cz == 1), 1.0, 0.0)
        cast_store(out_ptr + rows[:, None] * K + cols[None, :], w, m)


def row_blocks(M, K, device, budget=65536):
    """(ROWS, BLOCK_K): many rows per program on cpu (the interpreter pays per program)."""
    if not gpu_blocks(device):
        bk = max(16, min(next_pow2(K), budget))
        rows = max(1, min(next_pow2(M), budget // bk))
        return rows, bk
    bk = max(16, min(next_pow2(K), 1024))
    return 1, bk


def _fill_value(op, dt):
    if op in ("max", "norminf"):
        if dt.is_floating_point:
            return float("-inf") if op == "max" else 0.0
        return -2 ** 63 if dt.name != "bool" else 0
    if dt.is_floating_point:
        return float("inf")
    return 2 ** 63 - 1


_SITES = Sites()   # reduce_rows' launch key -> Launch


def reduce_rows(op, x, geom, out, idx=None, p=0.0, y=None, ystrides=(0, 0, 0)):
    """out[m] (contiguous, M elements) = reduction ``op`` of row m of x's (M, K) view.

    geom = (M, M2, K, stride_m1, stride_m2, stride_k); ``idx``: int64 arg-index output (max/min).
    ``p``: norm order (normp) or degrees of freedom (var/std).  ``y`` (op "sum" only): sum x * y instead,
    y's view having strides ``ystrides`` = (stride_m1, stride_m2, stride_k) in the same (M, K) rows.
    Extrema run ``extremum_rows_kernel``, logsumexp/var/std ``centered_rows_kernel``, the rest
    ``accumulate_rows_kernel``.
    """
    if geom[0] == 0:
        return out
    dev = out._storage.launch_device
    key = (op, geom, x.dtype, out.dtype, None if idx is None else idx.dtype, dev, T.FORCE_GPU_BLOCKS,
           None if y is None else (y.dtype, ystrides))
    site = _SITES.get(key)
    if site is None:
        M, M2, K, s1, s2, sk = geom
        rows, bk = row_blocks(M, K, dev)
        compute = compute_type(out.dtype if op in ("sum", "mean", "prod", "logsumexp") else x.dtype)
        blocks = {"COMPUTE": compute, "ROWS": rows, "BLOCK_K": bk}
        if op in EXTREMUM:
            fill = _fill_value(op, x.dtype)
            if isinstance(fill, int) and compute is not tl.int64:
                fill = float(fill)
            mn, ab = EXTREMUM[op]
            site = Launch(extremum_rows_kernel, (cdiv(M, rows),), dev,
                          [kptr(x), kptr(out), kptr(idx if idx is not None else out), M, M2, K, s1, s2, sk, fill],
                          {"MIN": mn, "ABS": ab, "WITH_INDEX": idx is not None, "IS_FLOAT": x.dtype.is_floating_point,
                           **blocks})
        elif op in CENTERED:
            site = Launch(centered_rows_kernel, (cdiv(M, rows),), dev,
                          [kptr(x), kptr(out), M, M2, K, s1, s2, sk, 0.0], {"OP": CENTERED[op], **blocks})
        else:
            site = Launch(accumulate_rows_kernel, (cdiv(M, rows),), dev,
                          [kptr(x), kptr(out), kptr(y if y is not None else x), M, M2, K, s1, s2, sk, 0.0,
                           *ystrides], {"OP": ACCUMULATE[op], "MUL": y is not None, **blocks})
        _SITES.add(key, site)
    xptr = x._storage.ptr + x._offset * x.dtype.itemsize     # data_ptr(), inlined
    optr = out._storage.ptr + out._offset * out.dtype.itemsize
    if op in EXTREMUM:
        site(xptr, optr, idx.data_ptr() if idx is not None else optr)     # fill: as given above
    elif op in CENTERED:
        site(xptr, optr, float(p))
    else:
        site(xptr, optr, y.data_ptr() if y is not None else xptr, float(p))
    return out


def scan_rows(op, x, geom, out, reverse=False):
    """out = inclusive cumulative ``op`` ("sum"/"prod") along K; x and out share geom's strides."""
    M, M2, K, s1, s2, sk = geom
    if M == 0 or K == 0:
        return out
    dev = out._storage.launch_device
    rows, bk = row_blocks(M, K, dev)
    launch(scan_rows_kernel, (cdiv(M, rows),), dev,
           [kptr(x), kptr(out), M, M2, K, s1, s2, sk],
           {"OP": ACCUMULATE[op], "REVERSE": bool(reverse), "COMPUTE": compute_type(out.dtype), "ROWS": rows,
            "BLOCK_K": bk})
    return out


def select(mode, x, geom, v, out):
    """out (contiguous (M, K), float) = gradient weights ``mode`` of x's (M, K) view (see tie_weights_kernel and
    prod_grad_kernel)."""
    M, M2, K, s1, s2, sk = geom
    if M == 0 or K == 0:
        return out
    dev = out._storage.launch_device
    rows, bk = row_blocks(M, K, dev)
    blocks = {"COMPUTE": compute_type(out.dtype), "ROWS": rows, "BLOCK_K": bk}
    if mode in PROD_GRAD:
        launch(prod_grad_kernel, (cdiv(M, rows),), dev, [kptr(x), kptr(out), M, M2, K, s1, s2, sk],
               {"MODE": PROD_GRAD[mode], **blocks})
    else:
        launch(tie_weights_kernel, (cdiv(M, rows),), dev,
               [kptr(x), kptr(v if v is not None else x), kptr(out), M, M2, K, s1, s2, sk],
               {"MODE": TIE_WEIGHTS[mode], **blocks})
    return out
