"""Shapes and strides for element-wise launches (pure Python, no Triton).

An element-wise launch walks the output in row-major order; every operand
(inputs and output) is addressed through its own element strides, with
stride 0 on broadcast dimensions.  Dimensions that are contiguous with their
neighbour in *every* operand are merged first, so most launches end up 1-D;
kernels support up to ``MAX_DIMS`` merged dimensions.
"""
MAX_DIMS = 6


def broadcast_shapes(*shapes):
    """PyTorch's broadcasting; raises PyTorch's error naming the first mismatch."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return tuple(shapes[0])
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise RuntimeError(_mismatch(shapes, nd))
    return tuple(out)


def _mismatch(shapes, nd):
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else shapes[0]
    for k in range(1, nd + 1):
        da = a[-k] if k <= len(a) else 1
        db = b[-k] if k <= len(b) else 1
        if da != db and da != 1 and db != 1:
            return (f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                    f"at non-singleton dimension {nd - k}")
    return f"shapes {' and '.join(str(list(s)) for s in shapes)} cannot be broadcast together"


def expand_strides(shape, strides, out_shape):
    """Strides of a tensor broadcast to ``out_shape`` (0 where it is broadcast)."""
    pad = len(out_shape) - len(shape)
    res = [0] * pad
    for d, s, o in zip(shape, strides, out_shape[pad:]):
        res.append(0 if (d == 1 and o != 1) else s)
    return res


def contiguous_strides(shape):
    n = len(shape)
    if n == 1:
        return (1,)
    if n == 2:
        return (max(shape[1], 1), 1)
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(st))


def collapse(shape, stride_lists):
    """Merge dims that are contiguous in every operand. Returns (shape, [strides per operand])."""
    dims = [(d, [s[i] for s in stride_lists]) for i, d in enumerate(shape) if d != 1]
    if not dims:
        return (1,), [[1] for _ in stride_lists]
    out = [dims[0]]
    for d, st in dims[1:]:
        pd, pst = out[-1]
        if all(ps == s * d for ps, s in zip(pst, st)):
            out[-1] = (pd * d, st)
        else:
            out.append((d, st))
    return tuple(d for d, _ in out), [[st[k] for _, st in out] for k in range(len(stride_lists))]


def launch_geometry(shape, stride_lists):
    """Kernel arguments for a strided element-wise launch over ``shape``.

    Returns (sizes d1..d5, per-operand (strides s0..s5, ndim)) where ndim is 0
    for an operand that is plain contiguous over the whole output.
    """
    cshape, cstrides = collapse(shape, stride_lists)
    nd = len(cshape)
    if nd > MAX_DIMS:
        raise NotImplementedError(f"element-wise kernels support {MAX_DIMS} non-mergeable dims, got {nd}")
    sizes = [1] * (MAX_DIMS - nd) + list(cshape)
    per = []
    for st in cstrides:
        if nd == 1 and st[0] == 1:
            per.append(([0] * MAX_DIMS, 0))
        else:
            per.append(([0] * (MAX_DIMS - nd) + list(st), nd))
    return sizes[1:], per


def non_overlapping_and_dense(shape, strides):
    """Every element has its own address and the addresses fill a block without gaps (PyTorch's test;
    true without elements)."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in sorted(((d, s) for d, s in zip(shape, strides) if d >= 2), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def preserved_strides(shape, strides):
    """Strides of a copy made with ``memory_format=preserve_format`` (``clone``, ``empty_like``): the input's
    own if it is non-overlapping and dense, else dense ones in the input's stride order (PyTorch's
    ``infer_dense_strides``: size-0/1 and stride-0 dims keep their place)."""
    if non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))      # innermost first

    def should_swap(a, b):
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa != sb:
            return 1 if sa > sb else -1
        return 1 if shape[a] > shape[b] else 0
    for i in range(1, nd):                  # insertion sort, as PyTorch's
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out, acc = [0] * nd, 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)
