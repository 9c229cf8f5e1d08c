"""The cpu replay program's small intermediates in fixed buffers (tier 3, after one run of the fused program).

A fused program (``fuse.py``) makes a fresh array for each ufunc result and takes views of it (a reduction in
ATen's order is dozens of reshapes, transposes and ``[..., i]`` picks of its partial sums): numpy's per-call cost
(~0.2-1 us) is the whole cost of a small step.  The shapes are static, so one run (``instrument``: the program
recording each local it assigns) tells each result's shape and dtype; ``hoist`` then gives each small ufunc
result of a local assigned once its own buffer, written with ``out=`` (the same loop, the same bits: the buffer
has the result's dtype and shape), evaluates once the views of buffers and of the arena's fixed views
(``v<n>``): their lines leave the program and their uses name the constant view, copies a padded
constant block once (``_padded``), and gives a small select on a constant mask (``_const_where``) and a small GEMM
with its addend (``_small_gemm``) buffers of their own; a GEMM's +0.0 accumulator is dropped (``_zero_addend``:
K > 1) or added in place (``_zero_acc``).  A value never outlives its replay (stores copy it into memory), and
each buffer is written once per run before any use: a buffer keeping the last run's numbers changes nothing."""
import re

import numpy as np

from ..kernels.runtime import blas

MAX_ELEMS = 4096            # a result this small gets a buffer (numpy's malloc and its call cost dominate)
MAX_BYTES = 1 << 20         # buffers of one program at most
GEMM_ELEMS = 16384          # a GEMM's result this small gets a buffer (np.matmul's out=: no allocation of 64 KiB)

_ASSIGN = re.compile(r"^    (t\d+\w*) = (.+)$")
_UFUNC = re.compile(r"^(c\d+_k\d+|_np\.\w+)\(((?:[\w.]+, )*[\w.]+)\)$")
_VIEW = re.compile(r"^(\w+)(\.reshape\([^()]*(?:\([^()]*\))?[^()]*\)|\.transpose\(\w+\)|\[\.\.\., \d+\]|\[c\d+_k\d+\])$")
_NAME = re.compile(r"\b(t\d+\w*)\b")
_ARG = re.compile(r"^(?:t\d+\w*|v\d+|h_\w+|c\d+_k\d+|c\d+x\d+)$")
_COPY = re.compile(r"^    (t\d+\w*) = (c\d+_k\d+)\.copy\(\)$")
_CALLEE = re.compile(r"([\w.]+)\(")
_PURE = ("_np.add.reduce", "_np.ascontiguousarray", "_np.where", ".astype")
_WHERE = re.compile(r"^_np\.where\(([\w.]+), ([\w.]+), ([\w.]+)\)$")
WHERE_ELEMS = 512           # a select this small on a constant mask: copyto(where=) into a buffer (np.where's own
                            # allocation and setup cost more up to about here)
_GEMM = re.compile(r"^\(?(c\d+_k\d+)\(([\w.]+), ([\w.]+), (c\d+_k\d+)\)(?: \+ ([\w.]+)\))?$")


def _padded(lines, ns, count):
    """Locals ``t = c.copy()`` (a constant block, e.g. a GEMM operand's zero padding) whose later lines first write
    constant index sets of it, then only pass it whole to pure calls: the same bytes at each read if the copy
    is made once (what the writes leave is written again before any read; the rest stays the constant)."""
    out = set()
    for i, ln in enumerate(lines):
        m = _COPY.match(ln)
        if m is None or count.get(m.group(1)) != 1 or type(ns.get(m.group(2))) is not np.ndarray:
            continue
        name, reading, ok = m.group(1), False, True
        use = re.compile(rf"\b{name}\b")
        for ln2 in lines[i + 1:]:
            if not use.search(ln2) or ln2.startswith("    del "):
                continue
            w = re.match(rf"^    {name}\[c\d+_k\d+\] = (.+)$", ln2)
            if w is not None and not reading and not use.search(w.group(1)):
                continue
            reading = True
            rhs = ln2.split(" = ", 1)[1] if re.match(r"^    t\d+\w* = ", ln2) else None
            if rhs is None or re.search(rf"\b{name}\b(?![,)])|(?<![(\s]){name}\b", rhs) or not all(
                    c in _PURE or _pure(ns.get(c)) for c in _CALLEE.findall(rhs)):
                ok = False
                break
        if ok and reading:
            out.add(name)
    return out


def _const_where(names, val, ns, rec, buf):
    """``np.where(mask, x, y)`` with a constant mask and a constant ``y`` (or ``x``) as a buffer (made in ``ns``)
    holding the constant where it is selected, the other operand copied in where it is: one ``copyto`` per run,
    the same elements.  None where it does not apply."""
    a, x, y = names
    ops = [ns.get(nm, rec.get(nm)) for nm in names]
    consts = [nm[0] == "c" and type(ns.get(nm)) is np.ndarray for nm in names]
    if not consts[0] or consts[1] == consts[2] or any(type(o) is not np.ndarray for o in ops) or \
            ops[0].dtype != np.bool_ or ops[1].dtype != val.dtype or ops[2].dtype != val.dtype or \
            any(not _fits(o.shape, val.shape) for o in ops):
        return None
    ns[buf] = np.array(np.broadcast_to(ops[2] if consts[2] else ops[1], val.shape))
    if consts[2]:
        return f"    _np.copyto({buf}, {x}, where={a})"
    ns[f"{buf}_m"] = ~ops[0]
    return f"    _np.copyto({buf}, {y}, where={buf}_m)"


def _fits(shape, to):
    """True if ``shape`` broadcasts to ``to`` (and no further)."""
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False


def _small_gemm(g, val, ns, rec, buf):
    """A small GEMM ``blas.matmul_small(a, b, dtype)`` (plus an addend: a tape's zero accumulator or a running sum) as
    ``np.matmul`` into buffer ``buf`` (made in ``ns``), the addend added in place unless it is a constant +0.0
    (``_zero_addend``): the call ``matmul_small`` makes for these operands (not its ``np.dot`` case), the same add;
    None where it does not apply."""
    f, a, b, dt, c = g.groups()
    ops = [ns.get(x, rec.get(x)) for x in (a, b)] + ([ns.get(c, rec.get(c))] if c else [])
    if ns.get(f) is not blas.matmul_small or any(type(x) is not np.ndarray for x in ops) or \
            ops[0].ndim != 2 or ops[1].ndim != 2 or not isinstance(ns.get(dt), np.dtype) or \
            ops[0].shape[1] == 1 and ops[0].dtype == ops[1].dtype == ns[dt]:
        return None
    shape = (ops[0].shape[0], ops[1].shape[1])
    if shape != val.shape or np.result_type(ns[dt], *ops[2:]) != val.dtype or \
            c and not _fits(ops[2].shape, shape):
        return None
    ns[buf] = np.empty(shape, val.dtype)
    line = f"    _np.matmul({a}, {b}, dtype={dt}, out={buf})"
    return line + (f"; _np.add({buf}, {c}, out={buf})" if c and not _zero_addend(c, ops, ns, val) else "")


def _zero_addend(c, ops, ns, val):
    """True if adding ``c`` to the GEMM ``ops[0] @ ops[1]`` (result ``val``) changes no bit: ``c`` a constant of
    +0.0s (a tape's ``tl.zeros`` accumulator) of no larger shape, no new dtype, and K > 1.  x + 0.0 is x for every
    x but -0.0, and a BLAS GEMM (np.matmul) never returns -0.0: each sum starts from +0.0, and +0.0 + -0.0 is
    +0.0 (only matmul_small's np.dot of K = 1 multiplies once: -0.0 * 1 is -0.0)."""
    z = ns.get(c) if c[0] == "c" else None
    return (type(z) is np.ndarray and z.dtype.kind == "f" and not z.view(np.uint8).any() and
            len(ops) == 3 and ops[0].ndim >= 2 and ops[0].shape[-1] > 1 and _fits(z.shape, val.shape) and
            val.dtype == np.result_type(val.dtype, z.dtype))


def _drop_zero_addend(g, val, ns, rec):
    """A GEMM too large for a buffer, ``(f(a, b, dtype) + c)`` with ``c`` a zero addend (``_zero_addend``): the GEMM
    alone (the same bits, one pass fewer); None where it does not apply."""
    f, a, b, dt, c = g.groups()
    ops = [ns.get(x, rec.get(x)) for x in (a, b, c)] if c else []
    if not ops or ns.get(f) not in (blas.matmul_small, blas.matmul, blas.matmul_large) or \
            any(type(x) is not np.ndarray for x in ops) or not isinstance(ns.get(dt), np.dtype) or \
            ns[dt] != val.dtype or not _zero_addend(c, ops, ns, val):
        return None
    return f"{f}({a}, {b}, {dt})"


_LOAD = re.compile(r"^    (t\d+\w*) = _nparray\((v\d+|c\d+_k\d+\[\w+(?: \+ \d+)?\])\)$")
_ARGUSE = r"(?<=[(\s])NAME(?=[,)])"          # the local as a call's argument, not a keyword's value
_STORES = re.compile(r"^    ([\w.]+)\[.*\] = |(?<!\w)out=(\(|\w+)")
_CALLS = re.compile(r"\b(?:k\d+|_mm|_ms)\(|\.fill\(|_refill\(")


def _writes(ln, ns):
    """True if line ``ln`` may write memory other than the program's own buffers (arrays owning their data)."""
    if _CALLS.search(ln):
        return True
    for m in _STORES.finditer(ln):
        t = m.group(1) or m.group(2)
        a = ns.get(t)
        if not t.startswith("h_") or type(a) is not np.ndarray or not a.flags.owndata:
            return True
    return False


def _uncopied(lines, ns):
    """Loads ``t = _nparray(view)`` (a tape's copy of the memory it reads) whose copy nothing needs: ``t`` only
    passed as an argument to pure calls (numpy's ufuncs and GEMMs, the tape's helpers: none writes its inputs) up
    to its ``del``, and no line in between may write memory (a store other than into the program's own buffers,
    an ``out=`` other than one, a call of a launch, a host call, a copy, a fill): the view holds the same values
    the copy would, without the copy.  The lines with those loads as the view itself."""
    out = list(lines)
    for i, ln in enumerate(lines):
        m = _LOAD.match(ln)
        if m is None:
            continue
        name = m.group(1)
        use = re.compile(rf"\b{name}\b")
        arg = re.compile(_ARGUSE.replace("NAME", name))
        ok, ended = True, False
        for ln2 in lines[i + 1:]:
            if ln2.startswith("    del ") and name in ln2[8:].split(", "):
                ended = True
                break
            if _writes(ln2, ns) or not ln2.startswith("    ") or ln2.startswith("     "):
                ok = False
                break
            rhs = ln2.split(" = ", 1)[1] if re.match(r"^    t\d+\w* = ", ln2) else ln2[4:]
            if len(use.findall(ln2)) != len(arg.findall(rhs)) or not all(
                    c in _PURE or c in ("_sel", "_nparray") or _pure(ns.get(c, getattr(np, c[4:], None) if c[:4] == "_np." else None))
                    for c in _CALLEE.findall(rhs)):
                ok = False
                break
        if ok and ended:
            out[i] = f"    {name} = {m.group(2)}"
    return out


def _zero_acc(g, val, ns, name):
    """A GEMM too big for a buffer plus a tape's zero accumulator (``F(a, b, dtype) + Z``, Z a constant of +0s): the
    GEMM's fresh result with +0.0 added in place (each element x + 0 as before: -0 becomes +0), no zeros read and
    no second array; None where it does not apply."""
    f, a, b, dt, c = g.groups()
    z = ns.get(c) if c else None
    if ns.get(f) not in (blas.matmul_small, blas.matmul, blas.matmul_large) or type(z) is not np.ndarray or \
            type(val) is not np.ndarray or not isinstance(ns.get(dt), np.dtype) or \
            not (z.dtype == val.dtype == ns[dt] == np.float32) or not _fits(z.shape, val.shape) or \
            np.signbit(z).any() or (z != 0).any():
        return None
    return f"    {name} = {f}({a}, {b}, {dt}); _np.add({name}, 0.0, out={name})"


def _pure(f):
    return type(f) is np.ufunc or getattr(f, "__module__", "").endswith("runtime.blas")


def instrument(src):
    """``src`` recording each local a top-level line assigns into ``_rec`` (a dict in the namespace)."""
    out = []
    for ln in src.split("\n"):
        out.append(ln)
        m = _ASSIGN.match(ln)
        if m is not None and ";" not in m.group(2):
            out.append(f"    _rec[{m.group(1)!r}] = {m.group(1)}")
    return "\n".join(out)


def hoist(src, ns, rec):
    """``src`` with small ufunc results in buffers and views of constants evaluated (in ``ns``), given ``rec``:
    the locals one run of ``instrument(src)`` assigned."""
    lines = src.split("\n")
    count = {}          # local -> times a line binds it
    for ln in lines:
        lhs = ln.strip().split(" = ", 1)[0] if " = " in ln else ""
        if lhs and "(" not in lhs and "[" not in lhs and "." not in lhs:
            for n in lhs.split(", "):
                count[n] = count.get(n, 0) + 1
    const = {}          # local -> name of its buffer or constant view in ns
    padded = _padded(lines, ns, count)
    total = 0
    out = []

    def subst(expr):
        return _NAME.sub(lambda m: const.get(m.group(1), m.group(1)), expr)
    for ln in lines:
        m = _ASSIGN.match(ln)
        if m is None or count.get(m.group(1)) != 1:
            if ln.startswith("    del "):
                names = [n for n in ln[8:].split(", ") if n not in const]
                if names:
                    out.append("    del " + ", ".join(names))
                continue
            out.append(subst(ln) if ln.startswith("    ") else ln)
            continue
        name, rhs = m.group(1), subst(m.group(2))
        val = rec.get(name)
        if name in padded:
            const[name] = f"h_{name}"
            ns[const[name]] = ns[rhs[:-len(".copy()")]].copy()
            continue
        u = _UFUNC.match(rhs)
        if u is not None and type(val) is np.ndarray and val.ndim and val.size <= MAX_ELEMS and \
                total + val.nbytes <= MAX_BYTES and val.flags.c_contiguous:
            f = ns.get(u.group(1)) if not u.group(1).startswith("_np.") else getattr(np, u.group(1)[4:], None)
            args = u.group(2).split(", ")
            if type(f) is np.ufunc and f.nout == 1 and len(args) == f.nin and all(_ARG.match(a) for a in args):
                buf = f"h_{name}"
                ns[buf] = np.empty_like(val)
                total += val.nbytes
                const[name] = buf
                out.append(f"    {u.group(1)}({u.group(2)}, out={buf})")
                continue
        wm = _WHERE.match(rhs)
        if wm is not None and type(val) is np.ndarray and val.size <= WHERE_ELEMS and total + val.nbytes <= MAX_BYTES:
            line = _const_where(wm.groups(), val, ns, rec, f"h_{name}")
            if line is not None:
                total += val.nbytes
                const[name] = f"h_{name}"
                out.append(line)
                continue
        g = _GEMM.match(rhs)
        if g is not None and type(val) is np.ndarray and val.size <= GEMM_ELEMS and total + val.nbytes <= MAX_BYTES:
            line = _small_gemm(g, val, ns, rec, f"h_{name}")
            if line is not None:
                total += val.nbytes
                const[name] = f"h_{name}"
                out.append(line)
                continue
        if g is not None and type(val) is np.ndarray:
            drop = _drop_zero_addend(g, val, ns, rec)     # the add dropped; else (K = 1, ...) +0.0 added in place
            line = None if drop is not None else _zero_acc(g, val, ns, name)
            if line is not None:
                out.append(line)
                continue
            rhs = drop or rhs
        v = _VIEW.match(rhs)
        base = None if v is None else v.group(1)
        if base is not None and (base in const.values() or re.fullmatch(r"v\d+", base)):
            try:
                res = eval(rhs, ns)
            except Exception:
                res = None
            arr = ns[base]
            if type(res) is np.ndarray and type(val) is np.ndarray and res.shape == val.shape and \
                    res.dtype == val.dtype and not res.flags.owndata and np.shares_memory(res, arr):
                cname = f"h_{name}"
                ns[cname] = res
                const[name] = cname
                continue
        if re.fullmatch(r"v\d+|h_\w+", rhs) and type(val) is np.ndarray:
            const[name] = rhs           # another name of a constant
            continue
        out.append(f"    {name} = {rhs}")
    return "\n".join(_uncopied(out, ns))
