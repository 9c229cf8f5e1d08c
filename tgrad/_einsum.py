"""``tgrad.einsum``, ``tensordot`` and ``kron``: contractions written as batched matmuls of tgrad ops (their
gradients come from those ops)."""
import math

from .autograd import dispatch as _dispatch


def complex_bilinear(fn, a, b):
    """fn(a, b) of a real bilinear ``fn`` (matmul, an einsum pair) when a or b is complex, from the parts:
    (ar br - ai bi) + i (ar bi + ai br), so the gradients are the real ops' (views .real / .imag, then complex)."""
    def cx(re, im):
        return _dispatch.call("complex", re, im)
    if not a.dtype.is_complex:
        return cx(fn(a, b.real), fn(a, b.imag))
    if not b.dtype.is_complex:
        return cx(fn(a.real, b), fn(a.imag, b))
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    return cx(fn(ar, br) - fn(ai, bi), fn(ar, bi) + fn(ai, br))


def _parse_einsum(equation, operands):
    """(input subscripts per operand, output subscripts), '...' replaced by private upper-case letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): {len(terms)} operands were specified in the equation but "
                           f"{len(operands)} were given")
    ell = max((op.dim() - len(t.replace("...", "")) for t, op in zip(terms, operands) if "..." in t), default=0)
    ell_letters = "".join(chr(0x100 + i) for i in range(ell))   # not a-zA-Z: cannot clash with the user's
    subs = []
    for t, op in zip(terms, operands):
        for c in t.replace("...", ""):
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in the equation "
                                   f"string, subscripts must be in [a-zA-Z]")
        if "..." in t:
            n = op.dim() - len(t.replace("...", ""))
            t = t.replace("...", ell_letters[ell - n:] if n else "")
        if len(t) != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the "
                               f"number of dimensions ({op.dim()}) for operand {len(subs)}"
                               f"{' and no ellipsis was given' if '...' not in terms[len(subs)] else ''}")
        subs.append(t)
    if arrow:
        out = out.replace("...", ell_letters)
    else:
        counts = {}
        for t in subs:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell_letters + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell_letters))
    return subs, out


def _einsum_diag(x, s):
    """x with repeated subscripts of ``s`` reduced to their diagonal: (x', s' with distinct letters)."""
    while len(set(s)) < len(s):
        c = next(c for c in s if s.count(c) > 1)
        i, j = s.index(c), s.index(c, s.index(c) + 1)
        x = x.diagonal(0, i, j)                        # the diagonal goes last
        s = s[:i] + s[i + 1:j] + s[j + 1:] + c
    return x, s


def _einsum_pair(a, sa, b, sb, keep):
    """Contract a (subscripts sa) with b (sb) by one bmm; letters in ``keep`` stay, the others shared by both
    are summed.  Returns (result, subscripts)."""
    batch = [c for c in sa if c in sb and c in keep]
    contract = [c for c in sa if c in sb and c not in keep]
    only_a = [c for c in sa if c not in sb]
    only_b = [c for c in sb if c not in sa]
    size = {}
    for x, s in ((a, sa), (b, sb)):
        for c, n in zip(s, x.shape):
            size[c] = n if size.get(c, 1) == 1 else size[c]
    a = a.permute([sa.index(c) for c in batch + only_a + contract])
    b = b.permute([sb.index(c) for c in batch + contract + only_b])
    a = a.expand([size[c] for c in batch] + list(a.shape[len(batch):len(batch) + len(only_a)])
                 + [size[c] for c in contract])
    b = b.expand([size[c] for c in batch + contract] + list(b.shape[len(batch) + len(contract):]))
    nb = math.prod(size[c] for c in batch)
    m = math.prod(a.shape[len(batch):len(batch) + len(only_a)])
    n = math.prod(b.shape[len(batch) + len(contract):])
    k = math.prod(size[c] for c in contract)
    out = a.reshape(nb, m, k).bmm(b.reshape(nb, k, n))
    shape = [size[c] for c in batch] + list(a.shape[len(batch):len(batch) + len(only_a)]) \
        + list(b.shape[len(batch) + len(contract):])
    return out.reshape(shape), "".join(batch + only_a + only_b)


def _sublist_equation(args):
    """(op1, [0, 1], op2, [1, 2], [0, 2]) -> ('ab,bc->ac', (op1, op2)); Ellipsis is '...'."""
    def letters(sub):
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
            elif not 0 <= v < 52:
                raise RuntimeError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
            else:
                out.append(chr(ord("a") + v) if v < 26 else chr(ord("A") + v - 26))
        return "".join(out)
    operands, subs = args[0::2], args[1::2]
    eq = ",".join(letters(sub) for sub in subs[:len(operands)])
    if len(args) % 2:
        operands = operands[:-1]
        eq = ",".join(letters(sub) for sub in subs) + "->" + letters(args[-1])
    return eq, operands


def einsum(*args):
    """``einsum(equation, *operands)``: the sum over the subscripts not in the output of the product of the
    operands (e.g. 'bhqd,bhkd->bhqk'); '...' broadcasts.  Operands are contracted left to right, each pair by
    one bmm (letters needed later are kept as batch dims)."""
    if len(args) < 2:
        raise RuntimeError("einsum(): must specify the equation string and at least one operand, or at least "
                           "one operand and its subscripts list")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):       # einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])
        equation, operands = _sublist_equation(args)
    subs, out = _parse_einsum(equation, operands)
    for c in out:
        if not any(c in s for s in subs):
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                               "operand")
    xs = []
    for i, (x, s) in enumerate(zip(operands, subs)):
        x, s = _einsum_diag(x, s)
        needed = out + "".join(subs[:i] + subs[i + 1:])
        drop = [d for d, c in enumerate(s) if c not in needed]
        if drop:                                         # a letter nobody else needs: sum it now
            x = x.sum(drop)
            s = "".join(c for d, c in enumerate(s) if d not in drop)
        xs.append((x, s))
    x, s = xs[0]
    for i, (y, t) in enumerate(xs[1:], 1):
        keep = out + "".join(u for _, u in xs[i + 1:])
        if x.dtype.is_complex or y.dtype.is_complex:
            r = []
            x = complex_bilinear(lambda u, v: r.append(_einsum_pair(u, s, v, t, keep)) or r[-1][0], x, y)
            s = r[-1][1]
        else:
            x, s = _einsum_pair(x, s, y, t, keep)
    extra = [d for d, c in enumerate(s) if c not in out]
    if extra:
        x = x.sum(extra)
        s = "".join(c for c in s if c in out)
    return x.permute([s.index(c) for c in out]) if s != out else x


def tensordot(a, b, dims=2, out=None):
    """Contract the last ``dims`` dims of a with the first ``dims`` of b (an int), or the listed dims
    ((dims_a, dims_b)) by one matmul."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da, db = [d % a.dim() for d in da], [d % b.dim() for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    fa, fb = [d for d in range(a.dim()) if d not in da], [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    am = a.permute(fa + da).reshape(-1, k)
    bm = b.permute(db + fb).reshape(k, -1)
    res = am.mm(bm).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])
    return res if out is None else out.copy_(res)


def kron(input, other):
    """The Kronecker product: out[i*B + j] = input[i] * other[j] in every dim (shapes padded with 1s)."""
    n = max(input.dim(), other.dim())
    sa = (1,) * (n - input.dim()) + tuple(input.shape)
    sb = (1,) * (n - other.dim()) + tuple(other.shape)
    a = input.reshape([s for d in sa for s in (d, 1)])
    b = other.reshape([s for d in sb for s in (1, d)])
    return (a * b).reshape([x * y for x, y in zip(sa, sb)])
