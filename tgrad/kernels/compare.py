"""Comparison, logical and bitwise math: FN(x, y, p0, p1) for ``binary_kernel`` (FN(x, p0, p1, p2) for
``unary_kernel``), computed in the promoted dtype."""
import triton
import triton.language as tl


@triton.jit
def logical_not_fn(x, p0, p1, p2):
    return x == 0


@triton.jit
def bitwise_not_fn(x, p0, p1, p2):
    return ~x


@triton.jit
def maximum_fn(x, y, p0, p1):
    return tl.where(x != x, x, tl.where(x > y, x, y))


@triton.jit
def minimum_fn(x, y, p0, p1):
    return tl.where(x != x, x, tl.where(x < y, x, y))


@triton.jit
def eq_fn(x, y, p0, p1):
    return x == y


@triton.jit
def ne_fn(x, y, p0, p1):
    return x != y


@triton.jit
def lt_fn(x, y, p0, p1):
    return x < y


@triton.jit
def le_fn(x, y, p0, p1):
    return x <= y


@triton.jit
def gt_fn(x, y, p0, p1):
    return x > y


@triton.jit
def ge_fn(x, y, p0, p1):
    return x >= y


@triton.jit
def logical_and_fn(x, y, p0, p1):
    return (x != 0) & (y != 0)


@triton.jit
def logical_or_fn(x, y, p0, p1):
    return (x != 0) | (y != 0)


@triton.jit
def logical_xor_fn(x, y, p0, p1):
    return (x != 0) ^ (y != 0)


@triton.jit
def bitwise_and_fn(x, y, p0, p1):
    return x & y


@triton.jit
def bitwise_or_fn(x, y, p0, p1):
    return x | y


@triton.jit
def bitwise_xor_fn(x, y, p0, p1):
    return x ^ y


@triton.jit
def lshift_fn(x, y, p0, p1):
    """x << y as ATen's lshift: 0 for a shift below 0 or not below the bit width of x's (computing) type."""
    ok = (y >= 0) & (y < x.dtype.primitive_bitwidth)
    return tl.where(ok, x << tl.where(ok, y, 0), 0)


@triton.jit
def rshift_fn(x, y, p0, p1):
    """x >> y (arithmetic for signed types) as ATen's rshift: a shift below 0 or past the value bits is the
    largest one (x's sign fill)."""
    top = x.dtype.primitive_bitwidth - x.dtype.is_int_signed()
    return x >> tl.where((y >= 0) & (y < top), y, top)
