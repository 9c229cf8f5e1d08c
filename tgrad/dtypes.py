"""dtypes: ``tgrad.float32`` ... ``tgrad.bool``, type promotion and the default dtype.

Each dtype carries the numpy dtype that reaches Triton as the kernel's
pointer type (``float32 -> *fp32``, ``bfloat16 -> *bf16`` via ml_dtypes,
``bool -> *u1``).  Promotion follows PyTorch: categories bool < integer <
floating; within a category the wider type wins; a Python scalar (or a
0-dim tensor) only lifts the category, never the width.
"""
import math
import threading

import ml_dtypes
import numpy as np


class dtype:
    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "legacy_name", "_kind", "_rank")

    def __init__(self, name, np_dtype, kind, rank, legacy_name):
        self.name = name
        self.legacy_name = legacy_name  # PyTorch's legacy type name in messages: "Float" (torch.FloatTensor)
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._kind = kind  # 0 bool, 1 integer, 2 floating, 3 complex
        self._rank = rank
        self.is_floating_point = kind == 2
        self.is_signed = name not in ("uint8", "bool")

    @property
    def is_complex(self):
        return self._kind == 3

    def to_real(self):
        """complex64 -> float32, complex128 -> float64 (other dtypes are returned as they are)."""
        return _REAL.get(self, self)

    def to_complex(self):
        """float32 (and narrower floats) -> complex64, float64 -> complex128; complex dtypes as they are."""
        return self if self._kind == 3 else complex128 if self is float64 else complex64

    def __repr__(self):
        return f"tgrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = dtype("bool", np.bool_, 0, 0, "Bool")
uint8 = dtype("uint8", np.uint8, 1, 1, "Byte")
int8 = dtype("int8", np.int8, 1, 2, "Char")
int16 = dtype("int16", np.int16, 1, 3, "Short")
int32 = dtype("int32", np.int32, 1, 4, "Int")
int64 = dtype("int64", np.int64, 1, 5, "Long")
float16 = dtype("float16", np.float16, 2, 1, "Half")
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2, 1, "BFloat16")
float32 = dtype("float32", np.float32, 2, 3, "Float")
float64 = dtype("float64", np.float64, 2, 4, "Double")

# Complex: interleaved (real, imag) pairs of the float type (numpy's layout); kernels see them as floats
complex64 = dtype("complex64", np.complex64, 3, 3, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, 3, 4, "ComplexDouble")
COMPLEX = (complex64, complex128)
_REAL = {complex64: float32, complex128: float64}

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
FLOATING = (float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL + COMPLEX}
_BY_NP = {d.np: d for d in ALL + COMPLEX}
# Legacy tensor type names used in error messages ("[torch.FloatTensor [1, 10]]").
TENSOR_TYPE_NAMES = {d: d.legacy_name + "Tensor" for d in ALL + COMPLEX}


def _by_name(name):
    return _BY_NAME[name]


def to_dtype(d, fn=None):
    """A ``dtype=`` argument of function ``fn``: a tgrad dtype, or Python's float / int / bool (float64 /
    int64 / bool, as PyTorch takes them); anything else (names, numpy dtypes) raises PyTorch's TypeError."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    t = type(d)
    tname = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    raise TypeError(f"{fn + '(): ' if fn else ''}argument 'dtype' must be torch.dtype, not {tname}")


def from_numpy_dtype(nd):
    r = _BY_NP.get(np.dtype(nd))
    if r is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(nd)}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, bfloat16, int64, int32, int16, int8, uint8, and bool.")
    return r


_state = threading.local()
_default = [float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    if d not in (float32, float64, float16, bfloat16):
        raise TypeError(("" if isinstance(d, dtype) else "invalid dtype object: ")
                        + "only floating-point types are supported as the default type")
    _default[0] = d


def promote_types(a, b):
    """The smallest dtype both a and b convert to without losing their category (torch.promote_types)."""
    if a is b:
        return a
    if a._kind == 3 or b._kind == 3:    # complex: the wider of the two float widths
        if a._kind == 3 and b._kind == 3:
            return a if a._rank >= b._rank else b
        c, other = (a, b) if a._kind == 3 else (b, a)
        return complex128 if other is float64 else c
    if a._kind != b._kind:
        return a if a._kind > b._kind else b
    if a._kind == 2 and {a, b} == {float16, bfloat16}:
        return float32
    if a._kind == 1 and uint8 in (a, b):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a._rank >= b._rank else b


# C++ type names in PyTorch's "value cannot be converted to type ... without overflow".
CPP_NAMES = {"int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t",
              "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def check_fill_value(value, dtype):
    """PyTorch's checked conversion of a Python number filling a ``dtype`` tensor (full, full_like, fill_).

    Integer types: a float must be finite and within [min, max] (then truncates); an int within
    [min, max], unsigned types also taking -max..-1 (two's complement wrap).  Floating types: a finite
    value beyond the largest finite one overflows (inf and nan are kept).  bool takes anything.
    """
    if dtype is bool_ or isinstance(value, (bool, np.bool_)) or dtype._kind == 3:
        return
    v = value.item() if isinstance(value, np.generic) else value
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {CPP_NAMES[dtype.name]} without overflow")
        v = v.real
    if dtype.is_floating_point:
        big = float(ml_dtypes.finfo(dtype.np).max)
        bad = abs(v) > big if isinstance(v, int) else (math.isfinite(v) and abs(v) > big)
    else:
        info = np.iinfo(dtype.np)
        if isinstance(v, int):
            bad = not ((-info.max if info.min == 0 else info.min) <= v <= info.max)
        else:
            bad = not (math.isfinite(v) and info.min <= v <= info.max)
    if bad:
        raise RuntimeError(f"value cannot be converted to type {CPP_NAMES[dtype.name]} without overflow")


def scalar_kind(v):
    if isinstance(v, (bool, np.bool_)):
        return 0
    if isinstance(v, (int, np.integer)):
        return 1
    if isinstance(v, (complex, np.complexfloating)):
        return 3
    return 2


def default_complex():
    """complex128 when the default dtype is float64, else complex64 (a Python complex number's dtype)."""
    return complex128 if _default[0] is float64 else complex64


def result_type(*operands):
    """PyTorch's result_type over tensors (dim > 0), 0-dim tensors and Python scalars.

    Each operand is (dtype, priority) where priority 2 = tensor with dims,
    1 = 0-dim tensor, 0 = Python scalar (dtype None, kind given instead).
    Operands are given as tgrad Tensors or Python numbers.
    """
    if len(operands) == 2:      # the common cases: two tensors of one dtype; a float tensor and a number
        d = getattr(operands[0], "dtype", None)
        if isinstance(d, dtype):
            other = operands[1]
            if d is getattr(other, "dtype", None) or d._kind == 2 and (type(other) is float or type(other) is int):
                return d
    best = [None, None, None]  # per priority: dtype
    for op in operands:
        if hasattr(op, "dtype") and hasattr(op, "shape") and not isinstance(op, (np.ndarray, np.generic)):
            pr = 2 if len(op.shape) > 0 else 1
            d = op.dtype
        else:
            pr = 0
            k = scalar_kind(op)
            d = (bool_, int64, get_default_dtype())[k] if k < 3 else default_complex()
        best[pr] = d if best[pr] is None else promote_types(best[pr], d)
    res = None
    for pr in (2, 1, 0):
        d = best[pr]
        if d is None:
            continue
        if res is None:
            res = d
        elif d._kind == 3 and res._kind < 3:
            # PyTorch's combine_categories: a float keeps its width, an integer takes the complex type
            res = res.to_complex() if res._kind == 2 else d
        elif d._kind > res._kind:
            # a lower-priority operand of a higher category lifts to the default of that category
            res = d if pr != 0 or d._kind != 2 else get_default_dtype()
            if pr == 1 and d._kind == 2:
                res = d
    return res


class finfo:
    """``tgrad.finfo(dtype)``: machine limits of a floating dtype (eps, max, min, tiny, resolution, bits)."""

    def __init__(self, type=None):
        type = get_default_dtype() if type is None else type
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        i = ml_dtypes.finfo(type.np)
        self.dtype, self.bits = type.name, type.itemsize * 8
        self.eps, self.max, self.min = float(i.eps), float(i.max), float(i.min)
        self.tiny = self.smallest_normal = float(i.smallest_normal)
        self.resolution = float(10.0 ** -i.precision)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """``tgrad.iinfo(dtype)``: limits of an integer dtype (min, max, bits)."""

    def __init__(self, type):
        if not isinstance(type, dtype) or type._kind != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        i = np.iinfo(type.np)
        self.dtype, self.bits, self.min, self.max = type.name, i.bits, int(i.min), int(i.max)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
