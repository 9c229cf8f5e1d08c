"""Fused (flash) attention kernels: O = dropout(softmax(scale * Q K^T + mask)) V, forward and backward.

Every operand is a strided 4-D view (Z, H, rows, cols): q (Z, H, L, E), k (Z, H/G, S, E), v (Z, H/G, S, Ev),
mask broadcast to (Z, H, L, S) (stride 0 where broadcast), G query heads per key/value head (GQA).
One program owns BLOCK_M query rows of BLOCK_B heads (one head on cuda; many on cpu, where programs are
what costs: every tile is a (BLOCK_B, rows, cols) block, the dots batched) and streams the keys in BLOCK_N
blocks with an online softmax (running max m and sum l), so no L x S matrix is ever stored; the forward
saves lse = m + log(l) per row, from which the backward recomputes each P block.  Dropout keeps element
(bh, i, j) when Philox U(seed, offset + (bh * L + i) * S + j) >= p, in the forward and again in the
backward.  A row with no allowed key gives O = 0 (and lse = +inf, so its P is 0 in the backward).
"""
import triton
import triton.language as tl

from ._lang import cast_store, kptr, param_h, split64
from .runtime import Launch, Sites, cdiv, dynamic_args, gpu_blocks, next_pow2
from .runtime import launcher as T

MASK_NONE, MASK_BOOL, MASK_ADD = 0, 1, 2


@triton.jit
def _scores(q, kt, rm, rn, L, S, scale, scale_lo, mask_ptrs, sm_l, sm_s,
            CAUSAL: tl.constexpr, MASK: tl.constexpr, ACC: tl.constexpr):
    """scale * q @ kt (BLOCK_B, BLOCK_M, BLOCK_N) with -inf where the mask, causality or the bounds forbid a
    key; rm (1, BLOCK_M, 1) query rows, rn (1, 1, BLOCK_N) keys, mask_ptrs (BLOCK_B, 1, 1) per head."""
    s = tl.dot(q, kt, input_precision="ieee", out_dtype=ACC)
    s = s * param_h(scale, scale_lo, s)     # (scale, scale_lo): split64(scale)
    ok = (rm < L) & (rn < S)
    if CAUSAL:
        ok = ok & (rn <= rm)
    if MASK == 1:
        ok = ok & (tl.load(mask_ptrs + rm * sm_l + rn * sm_s, mask=ok, other=0) != 0)
    if MASK == 2:
        s += tl.load(mask_ptrs + rm * sm_l + rn * sm_s, mask=ok, other=0.0).to(ACC)
    return tl.where(ok, s, float("-inf"))


@triton.jit
def _keep(seed, offset, bh, rm, rn, L, S, p):
    """Dropout's keep mask of heads bh (BLOCK_B, 1, 1), rows rm, keys rn: Philox U(seed, offset + flat index)
    >= p."""
    idx = (bh * L + rm) * S + rn
    return tl.rand(seed, (offset + idx).to(tl.uint32)) >= p


@triton.jit
def _t(x):
    """Swap the last two dims of a (BLOCK_B, rows, cols) block."""
    return tl.permute(x, (0, 2, 1))


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, m_ptr, o_ptr, lse_ptr, ZH, H, L, S, E, EV, GROUP,
                         scale, scale_lo, p, seed, offset,
                         sq_z, sq_h, sq_l, sq_e, sk_z, sk_h, sk_s, sk_e, sv_z, sv_h, sv_s, sv_e,
                         sm_z, sm_h, sm_l, sm_s,
                         CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, ACC: tl.constexpr,
                         UPCAST: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """o[z, h, i] = sum_j P[i, j] v[z, h/G, j], P = dropout(softmax_j(scale * q_i . k_j + mask[i, j]));
    lse[z, h, i] = log sum_j exp(...); o contiguous (Z, H, L, Ev), lse contiguous (Z, H, L) in ACC.
    Program (m, b): query rows [m BLOCK_M, (m + 1) BLOCK_M) of the BLOCK_B heads [b BLOCK_B, ...) of ZH."""
    pid_m = tl.program_id(0)
    bh1 = tl.program_id(1).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    bh = bh1[:, None, None]
    hb = bh < ZH
    z, h = bh // H, bh % H
    hk = h // GROUP
    rm1 = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rm = rm1[None, :, None]
    rd = tl.arange(0, BLOCK_E)
    re = tl.arange(0, BLOCK_EV)[None, None, :]
    q = tl.load(q_ptr + z * sq_z + h * sq_h + rm * sq_l + rd[None, None, :] * sq_e,
                mask=hb & (rm < L) & (rd[None, None, :] < E), other=0.0)
    if UPCAST:
        q = q.to(ACC)
    k_base = k_ptr + z * sk_z + hk * sk_h
    v_base = v_ptr + z * sv_z + hk * sv_h
    mask_base = m_ptr + z * sm_z + h * sm_h
    m_i = tl.full([BLOCK_B, BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_B, BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_B, BLOCK_M, BLOCK_EV], ACC)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)      # keys past the block's last row are all masked
    for n0 in range(0, hi, BLOCK_N):
        rn1 = n0 + tl.arange(0, BLOCK_N)
        rn = rn1[None, None, :]
        kt = tl.load(k_base + rn * sk_s + rd[None, :, None] * sk_e, mask=hb & (rn < S) & (rd[None, :, None] < E),
                     other=0.0)
        v = tl.load(v_base + rn1[None, :, None] * sv_s + re * sv_e, mask=hb & (rn1[None, :, None] < S) & (re < EV),
                    other=0.0)
        if UPCAST:
            kt = kt.to(ACC)
            v = v.to(ACC)
        s = _scores(q, kt, rm, rn, L, S, scale, scale_lo, mask_base, sm_l, sm_s, CAUSAL, MASK, ACC)
        m_new = tl.maximum(m_i, tl.max(s, axis=2))
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        pr = tl.exp(s - safe[:, :, None])
        alpha = tl.exp(m_i - safe)
        l_i = l_i * alpha + tl.sum(pr, axis=2)
        if DROPOUT:
            pr = tl.where(_keep(seed, offset, bh, rm, rn, L, S, p), pr / (1.0 - p), 0.0)
        acc = acc * alpha[:, :, None] + tl.dot(pr.to(v.dtype), v, input_precision="ieee", out_dtype=ACC)
        m_i = m_new
    empty_row = l_i == 0.0
    o = acc / tl.where(empty_row, 1.0, l_i)[:, :, None]
    cast_store(o_ptr + (bh * L + rm) * EV + re, o, hb & (rm < L) & (re < EV))
    lse = tl.where(empty_row, float("inf"), m_i + tl.log(tl.where(empty_row, 1.0, l_i)))
    tl.store(lse_ptr + bh1[:, None] * L + rm1[None, :], lse, mask=(bh1[:, None] < ZH) & (rm1[None, :] < L))


@triton.jit
def attention_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, m_ptr, o_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                            ZH, H, L, S, E, EV, GROUP, scale, scale_lo, p, seed, offset,
                            sq_z, sq_h, sq_l, sq_e, sk_z, sk_h, sk_s, sk_e, sv_z, sv_h, sv_s, sv_e,
                            sm_z, sm_h, sm_l, sm_s,
                            CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, ACC: tl.constexpr,
                            UPCAST: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """delta[i] = do_i . o_i; dq_i = scale * sum_j dS[i, j] k_j with dS = P * (dropout(do_i . v_j) - delta_i);
    o, do contiguous (Z, H, L, Ev); lse, delta (Z, H, L) in ACC; dq contiguous (Z, H, L, E)."""
    pid_m = tl.program_id(0)
    bh1 = tl.program_id(1).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    bh = bh1[:, None, None]
    hb = bh < ZH
    z, h = bh // H, bh % H
    hk = h // GROUP
    rm1 = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rm = rm1[None, :, None]
    rd = tl.arange(0, BLOCK_E)[None, None, :]
    re = tl.arange(0, BLOCK_EV)[None, None, :]
    qmask = hb & (rm < L) & (rd < E)
    omask = hb & (rm < L) & (re < EV)
    rows = (bh1[:, None] < ZH) & (rm1[None, :] < L)
    q = tl.load(q_ptr + z * sq_z + h * sq_h + rm * sq_l + rd * sq_e, mask=qmask, other=0.0)
    do = tl.load(do_ptr + (bh * L + rm) * EV + re, mask=omask, other=0.0)
    o = tl.load(o_ptr + (bh * L + rm) * EV + re, mask=omask, other=0.0)
    delta = tl.sum(do.to(ACC) * o.to(ACC), axis=2)
    tl.store(delta_ptr + bh1[:, None] * L + rm1[None, :], delta, mask=rows)
    lse = tl.load(lse_ptr + bh1[:, None] * L + rm1[None, :], mask=rows, other=0.0)
    if UPCAST:
        q = q.to(ACC)
        do = do.to(ACC)
    k_base = k_ptr + z * sk_z + hk * sk_h
    v_base = v_ptr + z * sv_z + hk * sv_h
    mask_base = m_ptr + z * sm_z + h * sm_h
    dq = tl.zeros([BLOCK_B, BLOCK_M, BLOCK_E], ACC)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    for n0 in range(0, hi, BLOCK_N):
        rn1 = n0 + tl.arange(0, BLOCK_N)
        rn = rn1[None, None, :]
        k = tl.load(k_base + rn1[None, :, None] * sk_s + rd * sk_e, mask=hb & (rn1[None, :, None] < S) & (rd < E),
                    other=0.0)
        vt = tl.load(v_base + rn * sv_s + re.reshape(1, BLOCK_EV, 1) * sv_e,
                     mask=hb & (rn < S) & (re.reshape(1, BLOCK_EV, 1) < EV), other=0.0)
        if UPCAST:
            k = k.to(ACC)
            vt = vt.to(ACC)
        s = _scores(q, _t(k), rm, rn, L, S, scale, scale_lo, mask_base, sm_l, sm_s, CAUSAL, MASK, ACC)
        pr = tl.exp(s - lse[:, :, None])
        dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
        if DROPOUT:
            dp = tl.where(_keep(seed, offset, bh, rm, rn, L, S, p), dp / (1.0 - p), 0.0)
        ds = pr * (dp - delta[:, :, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision="ieee", out_dtype=ACC)
    cast_store(dq_ptr + (bh * L + rm) * E + rd, dq * param_h(scale, scale_lo, dq), qmask)


@triton.jit
def attention_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, m_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                              ZH, H, L, S, E, EV, GROUP, scale, scale_lo, p, seed, offset,
                              sq_z, sq_h, sq_l, sq_e, sk_z, sk_h, sk_s, sk_e, sv_z, sv_h, sv_s, sv_e,
                              sm_z, sm_h, sm_l, sm_s,
                              CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr,
                              ACC: tl.constexpr, UPCAST: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """dv_j = sum_{g, i} dropout(P)[i, j] do_i; dk_j = scale * sum_{g, i} dS[i, j] q_i over the G query heads
    of key head (z, hk); dk contiguous (Z, H/G, S, E), dv contiguous (Z, H/G, S, Ev).
    Program (n, b): keys [n BLOCK_N, (n + 1) BLOCK_N) of the BLOCK_B key heads [b BLOCK_B, ...) of ZH / G."""
    pid_n = tl.program_id(0)
    HK = H // GROUP
    bhk = (tl.program_id(1).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B))[:, None, None]
    hb = bhk < ZH // GROUP
    z, hk = bhk // HK, bhk % HK
    rn1 = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    rn = rn1[None, None, :]
    rnr = rn1[None, :, None]
    rd = tl.arange(0, BLOCK_E)[None, None, :]
    re = tl.arange(0, BLOCK_EV)[None, None, :]
    kmask = hb & (rnr < S) & (rd < E)
    vmask = hb & (rnr < S) & (re < EV)
    k = tl.load(k_ptr + z * sk_z + hk * sk_h + rnr * sk_s + rd * sk_e, mask=kmask, other=0.0)
    v = tl.load(v_ptr + z * sv_z + hk * sv_h + rnr * sv_s + re * sv_e, mask=vmask, other=0.0)
    if UPCAST:
        k = k.to(ACC)
        v = v.to(ACC)
    kt = _t(k)
    vt = _t(v)
    dk = tl.zeros([BLOCK_B, BLOCK_N, BLOCK_E], ACC)
    dv = tl.zeros([BLOCK_B, BLOCK_N, BLOCK_EV], ACC)
    lo = 0
    if CAUSAL:
        lo = (pid_n * BLOCK_N // BLOCK_M) * BLOCK_M    # query blocks above the diagonal see none of these keys
    for g in range(0, GROUP):
        h = hk * GROUP + g
        bh = z * H + h
        mask_base = m_ptr + z * sm_z + h * sm_h
        for m0 in range(lo, L, BLOCK_M):
            rm1 = m0 + tl.arange(0, BLOCK_M)
            rm = rm1[None, :, None]
            q = tl.load(q_ptr + z * sq_z + h * sq_h + rm * sq_l + rd * sq_e, mask=hb & (rm < L) & (rd < E),
                        other=0.0)
            do = tl.load(do_ptr + (bh * L + rm) * EV + re, mask=hb & (rm < L) & (re < EV), other=0.0)
            if UPCAST:
                q = q.to(ACC)
                do = do.to(ACC)
            rows = bh * L + rm                        # (BLOCK_B, BLOCK_M, 1)
            lse = tl.load(lse_ptr + rows, mask=hb & (rm < L), other=float("inf"))
            delta = tl.load(delta_ptr + rows, mask=hb & (rm < L), other=0.0)
            s = _scores(q, kt, rm, rn, L, S, scale, scale_lo, mask_base, sm_l, sm_s, CAUSAL, MASK, ACC)
            pr = tl.exp(s - lse)
            dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
            if DROPOUT:
                keep = _keep(seed, offset, bh, rm, rn, L, S, p)
                pd = tl.where(keep, pr / (1.0 - p), 0.0)
                dp = tl.where(keep, dp / (1.0 - p), 0.0)
            else:
                pd = pr
            dv += tl.dot(_t(pd.to(do.dtype)), do, input_precision="ieee", out_dtype=ACC)
            ds = pr * (dp - delta)
            dk += tl.dot(_t(ds.to(q.dtype)), q, input_precision="ieee", out_dtype=ACC)
    cast_store(dk_ptr + (bhk * S + rnr) * E + rd, dk * param_h(scale, scale_lo, dk), kmask)
    cast_store(dv_ptr + (bhk * S + rnr) * EV + re, dv, vmask)


for _k in (attention_fwd_kernel, attention_bwd_dq_kernel, attention_bwd_dkdv_kernel):
    dynamic_args(_k, "seed", "offset")      # a new dropout draw replays the same tape


def blocks(heads, L, S, E, EV, device, dtype_name):
    """(BLOCK_B, BLOCK_M, BLOCK_N, BLOCK_E, BLOCK_EV): on cpu the whole (L, S) problem of many heads in few
    programs (the interpreter pays per program; a (BLOCK_B, BLOCK_M, max(BLOCK_N, BLOCK_E)) block stays
    <= 2^17 elements); on cuda one head per program and square BLOCK_M = BLOCK_N tiles of at most
    2048 / 512 / 256 elements per row block (fp16-bf16 / fp32 / fp64: tensor-core vs FMA dots), 16..64."""
    be, bev = max(16, next_pow2(E)), max(16, next_pow2(EV))
    if gpu_blocks(device):
        budget = {"float32": 512, "float64": 256}.get(dtype_name, 2048)
        side = max(16, min(64, budget // max(be, bev)))
        return 1, side, side, be, bev
    bm, bn = max(16, min(next_pow2(L), 128)), max(16, min(next_pow2(S), 256))
    return min(next_pow2(heads), max(1, 2 ** 17 // (bm * max(bn, be, bev)))), bm, bn, be, bev


_SITES = Sites()


def _common(geom, q, dev, causal, mask_kind, dropout):
    """Launch arguments and constexprs shared by the three kernels; geom = (Z, H, L, S, E, EV, GROUP,
    q/k/v/mask strides (z, h, row, col))."""
    Z, H, L, S, E, EV, G, sq, sk, sv, sm = geom
    bb, bm, bn, be, bev = blocks(Z * H, L, S, E, EV, dev, q.dtype.name)
    f64 = q.dtype.name == "float64"
    cexpr = {"CAUSAL": causal, "MASK": mask_kind, "DROPOUT": dropout, "ACC": tl.float64 if f64 else tl.float32,
             "UPCAST": not gpu_blocks(dev) or f64 or q.dtype.name == "float32",
             "BLOCK_B": bb, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_E": be, "BLOCK_EV": bev}
    return [Z * H, H, L, S, E, EV, G], list(sq) + list(sk) + list(sv) + list(sm), cexpr


def _key(kind, geom, q, k, v, mask, causal, mask_kind, dropout, dev, seed, offset):
    # seed / offset are replayed as values but must keep the int32 / int64 class of the recorded launch
    return (kind, geom[:7], tuple(map(tuple, geom[7:])), q.dtype, k.dtype, v.dtype, mask.dtype, causal, mask_kind,
            dropout, dev, T.FORCE_GPU_BLOCKS, seed < 2 ** 31, offset < 2 ** 31)


def forward(q, k, v, mask, out, lse, geom, *, scale, p, seed, offset, causal, mask_kind):
    """out (Z, H, L, Ev) and lse (Z, H, L) contiguous, filled; mask: a tensor (``q`` when MASK_NONE)."""
    Z, H, L = geom[:3]
    if out.numel() == 0:
        return out, lse
    dev = out._storage.launch_device
    dropout = p > 0
    key = _key("fwd", geom, q, k, v, mask, causal, mask_kind, dropout, dev, seed, offset)
    site = _SITES.get(key)
    if site is None:
        ints, strides, cexpr = _common(geom, q, dev, causal, mask_kind, dropout)
        args = [kptr(q), kptr(k), kptr(v), kptr(mask), kptr(out), kptr(lse), *ints, *split64(scale), float(p),
                int(seed), int(offset), *strides]
        grid = (cdiv(L, cexpr["BLOCK_M"]), cdiv(Z * H, cexpr["BLOCK_B"]))
        site = _SITES.add(key, Launch(attention_fwd_kernel, grid, dev, args, cexpr))
    site(q.data_ptr(), k.data_ptr(), v.data_ptr(), mask.data_ptr(), out.data_ptr(), lse.data_ptr(),
         *split64(scale), float(p), int(seed), int(offset))
    return out, lse


def backward(q, k, v, mask, out, dout, lse, delta, dq, dk, dv, geom, *, scale, p, seed, offset, causal, mask_kind):
    """dq (Z, H, L, E), dk (Z, H/G, S, E), dv (Z, H/G, S, Ev) contiguous, filled; out, dout contiguous like out;
    delta (Z, H, L) scratch."""
    Z, H, L, S = geom[:4]
    G = geom[6]
    dev = dq._storage.launch_device
    dropout = p > 0
    if dq.numel() == 0 and dk.numel() == 0 and dv.numel() == 0:
        return dq, dk, dv
    ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr(), mask.data_ptr())
    key = _key("dq", geom, q, k, v, mask, causal, mask_kind, dropout, dev, seed, offset) + (dout.dtype,)
    site = _SITES.get(key)
    if site is None:
        ints, strides, cexpr = _common(geom, q, dev, causal, mask_kind, dropout)
        args = [kptr(q), kptr(k), kptr(v), kptr(mask), kptr(out), kptr(dout), kptr(lse), kptr(delta), kptr(dq),
                *ints, *split64(scale), float(p), int(seed), int(offset), *strides]
        grid = (cdiv(L, cexpr["BLOCK_M"]), cdiv(Z * H, cexpr["BLOCK_B"]))
        site = _SITES.add(key, Launch(attention_bwd_dq_kernel, grid, dev, args, cexpr))
    site(*ptrs, out.data_ptr(), dout.data_ptr(), lse.data_ptr(), delta.data_ptr(), dq.data_ptr(),
         *split64(scale), float(p), int(seed), int(offset))
    key = _key("dkdv", geom, q, k, v, mask, causal, mask_kind, dropout, dev, seed, offset) + (dout.dtype,)
    site = _SITES.get(key)
    if site is None:
        ints, strides, cexpr = _common(geom, q, dev, causal, mask_kind, dropout)
        args = [kptr(q), kptr(k), kptr(v), kptr(mask), kptr(dout), kptr(lse), kptr(delta), kptr(dk), kptr(dv),
                *ints, *split64(scale), float(p), int(seed), int(offset), *strides]
        grid = (cdiv(S, cexpr["BLOCK_N"]), cdiv(Z * (H // G), cexpr["BLOCK_B"]))
        site = _SITES.add(key, Launch(attention_bwd_dkdv_kernel, grid, dev, args, cexpr))
    site(*ptrs, dout.data_ptr(), lse.data_ptr(), delta.data_ptr(), dk.data_ptr(), dv.data_ptr(),
         *split64(scale), float(p), int(seed), int(offset))
    return dq, dk, dv
