"""Comparison ops (PyTorch's docs group): eq, ne, lt, le, gt, ge, maximum/minimum; the logical and bitwise
ops (FNs in tgrad/kernels/compare.py on kernels/elementwise.py's kernels).  Only maximum/minimum have a
gradient; the others give bool or integer results."""
from .. import dtypes as D
from ..kernels import elementwise as K
from ..kernels import compare as KC
from ..kernels import complex as KX
from ..kernels._lang import compute_type
from . import Op, call as _c
from .complex import as_complex
from ..tensor import empty
from ._pointwise import _broadcast_out, _full, _launch_unary, _out, _promoted


def _minmax_backward(first_wins):
    """maximum/minimum: the gradient goes to the chosen operand, split in half on ties (as PyTorch)."""
    def backward(ctx, g):
        x, y = ctx.saved["self"], ctx.saved["other"]
        tie = _c("eq", x, y)
        half = _c("where", tie, g.mul(0.5), g)
        zero = _full(0, g)
        gx = _c("where", _c(first_wins[1], x, y), zero, half) if ctx.needs_input_grad[0] else None
        gy = _c("where", _c(first_wins[0], x, y), zero, half) if ctx.needs_input_grad[1] else None
        return gx, gy
    return backward


def _truth(t, zero=False):
    """A complex t's truth as a bool tensor (t != 0; t == 0 if ``zero``); other dtypes unchanged."""
    if t.dtype._kind != 3:
        return t
    return KX.compare(KX.EQ if zero else KX.NE, t, _full(0, t), empty(t._shape, D.bool_, t._storage.device))


def _bool_out(r, out):
    """r (bool) stored in ``out``, which a complex in-place call (logical_and_) makes complex: r + 0i."""
    if out is None or out.dtype._kind != 3:
        return r
    return KX.make(KX.COMPLEX, r, _full(0, r), out)


def _compare(fn, name):
    """Comparisons / logical ops: computed in the promoted dtype, bool result; complex operands: eq / ne
    (both parts compared) and the logical ops (of x != 0, as PyTorch's), the orderings raise as PyTorch's."""
    def forward(self, other, *, out=None):
        dt = D.result_type(self, other)
        if dt._kind == 3 and name.startswith("logical"):
            o = _broadcast_out(None if out is None or out.dtype._kind == 3 else out, D.bool_, "", self, other)
            r = K.binary(fn, _truth(self), _truth(other), o, compute=compute_type(D.bool_))
            return _bool_out(r, out)
        o = _broadcast_out(out, D.bool_, "", self, other)
        if dt._kind == 3:
            if name not in ("eq", "ne"):
                raise NotImplementedError(f"\"{name}_{self._storage.device.type}\" not implemented for "
                                          f"'{dt.legacy_name}'")
            return KX.compare(KX.EQ if name == "eq" else KX.NE, as_complex(self, dt), as_complex(other, dt), o)
        return K.binary(fn, self, other, o, compute=compute_type(dt))
    return forward


def _ordered(fn, name):
    """maximum / minimum: promoted; complex operands have no order (PyTorch's error)."""
    promoted = _promoted(fn, name)

    def forward(self, other, *, out=None):
        if self.dtype._kind == 3 or other.dtype._kind == 3:
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return promoted(self, other, out=out)
    return forward


def logical_not_forward(self, *, out=None):
    if self.dtype._kind == 3:       # PyTorch's: x == 0
        r = _truth(self, zero=True)
        return _bool_out(r, out) if out is None or out.dtype._kind == 3 else K.copy(r, _out(
            out, self.shape, D.bool_, self.device, "logical_not"))
    o = _out(out, self.shape, D.bool_, self.device, "logical_not")
    return K.unary(KC.logical_not_fn, self, o, compute=compute_type(self.dtype))


def _bitwise(fn, name):
    def forward(self, other, *, out=None):
        dt = D.result_type(self, other)
        if dt.is_floating_point or dt._kind == 3:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dt.legacy_name}'")
        o = _broadcast_out(out, dt, name, self, other)
        return K.binary(fn, self, other, o, compute=compute_type(dt))
    return forward


def bitwise_not_forward(self, *, out=None):
    if self.dtype.is_floating_point or self.dtype._kind == 3:
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{self.dtype.legacy_name}'")
    fn = KC.logical_not_fn if self.dtype is D.bool_ else KC.bitwise_not_fn
    return _launch_unary(fn, self, out, self.dtype)


MAXIMUM = Op("maximum", _ordered(KC.maximum_fn, "maximum"), _minmax_backward(("gt", "lt")),
             "MaximumBackward0", inputs=("self", "other"), save=("self", "other"), variants=("method", "function"))
MINIMUM = Op("minimum", _ordered(KC.minimum_fn, "minimum"), _minmax_backward(("lt", "gt")),
             "MinimumBackward0", inputs=("self", "other"), save=("self", "other"), variants=("method", "function"))
EQ = Op("eq", _compare(KC.eq_fn, "eq"), inputs=("self", "other"), variants=("method", "function"), inplace=True)
NE = Op("ne", _compare(KC.ne_fn, "ne"), inputs=("self", "other"), variants=("method", "function"), inplace=True)
LT = Op("lt", _compare(KC.lt_fn, "lt"), inputs=("self", "other"), variants=("method", "function"), inplace=True)
LE = Op("le", _compare(KC.le_fn, "le"), inputs=("self", "other"), variants=("method", "function"), inplace=True)
GT = Op("gt", _compare(KC.gt_fn, "gt"), inputs=("self", "other"), variants=("method", "function"), inplace=True)
GE = Op("ge", _compare(KC.ge_fn, "ge"), inputs=("self", "other"), variants=("method", "function"), inplace=True)
LOGICAL_AND = Op("logical_and", _compare(KC.logical_and_fn, "logical_and"), inputs=("self", "other"),
                 variants=("method", "function"), inplace=True)
LOGICAL_OR = Op("logical_or", _compare(KC.logical_or_fn, "logical_or"), inputs=("self", "other"),
                variants=("method", "function"), inplace=True)
LOGICAL_XOR = Op("logical_xor", _compare(KC.logical_xor_fn, "logical_xor"), inputs=("self", "other"),
                 variants=("method", "function"), inplace=True)
BITWISE_AND = Op("bitwise_and", _bitwise(KC.bitwise_and_fn, "bitwise_and"), inputs=("self", "other"),
                 variants=("method", "function"), inplace=True)
BITWISE_OR = Op("bitwise_or", _bitwise(KC.bitwise_or_fn, "bitwise_or"), inputs=("self", "other"),
                variants=("method", "function"), inplace=True)
BITWISE_XOR = Op("bitwise_xor", _bitwise(KC.bitwise_xor_fn, "bitwise_xor"), inputs=("self", "other"),
                 variants=("method", "function"), inplace=True)
BITWISE_LEFT_SHIFT = Op("bitwise_left_shift", _bitwise(KC.lshift_fn, "lshift"), inputs=("self", "other"),
                        variants=("method", "function"), inplace=True)
BITWISE_RIGHT_SHIFT = Op("bitwise_right_shift", _bitwise(KC.rshift_fn, "rshift"), inputs=("self", "other"),
                         variants=("method", "function"), inplace=True)
LOGICAL_NOT = Op("logical_not", logical_not_forward, variants=("method", "function"), inplace=True)
BITWISE_NOT = Op("bitwise_not", bitwise_not_forward, variants=("method", "function"), inplace=True)


ENTRIES = [MAXIMUM, MINIMUM, EQ, NE, LT, LE, GT, GE, LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR, BITWISE_AND, BITWISE_OR,
           BITWISE_XOR, BITWISE_LEFT_SHIFT, BITWISE_RIGHT_SHIFT, LOGICAL_NOT, BITWISE_NOT]
