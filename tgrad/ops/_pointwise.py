"""Helpers the element-wise families share (elementwise, unary, activation, compare): PyTorch's ``out=`` checks
and casting rule, result dtypes, 0-dim constants, and one launch of a unary or promoted binary FN."""
from .. import dtypes as D
from ..kernels import _geometry as G
from ..kernels import elementwise as K
from ..kernels._lang import compute_type
from ..tensor import empty, scalar, zeros
from . import call as _c


def _out(out, shape, dtype, device, name):
    if out is None:
        return empty(shape, dtype, device)
    if out._shape != tuple(shape):
        raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    if not _can_cast(dtype, out.dtype):
        raise RuntimeError(f"result type {dtype.legacy_name} can't be cast to the desired output type "
                           f"{out.dtype.legacy_name}")
    return out


def _can_cast(frm, to):
    """PyTorch's canCast: no float -> integral, no non-bool -> bool."""
    if (frm.is_floating_point and not to.is_floating_point and not to.is_complex
            or frm.is_complex and not to.is_complex):
        return False
    if frm is not D.bool_ and to is D.bool_:
        return False
    return True


def _float_result(dt):
    return dt if dt.is_floating_point else D.get_default_dtype()


def _full(value, like):
    """A 0-dim tensor of ``value`` with ``like``'s dtype and device."""
    return scalar(value, like.dtype, like.device)


def _zeros(like):
    return zeros(like._shape, like.dtype, like.device)


def _mask(m, g):
    """g where m else 0."""
    return _c("where", m, g, _full(0, g))


def _gt0(x):
    return _c("gt", x, _full(0, x))


def _launch_unary(fn, self, out, dt, p0=0.0, p1=0.0, p2=0.0, name=""):
    o = _out(out, self.shape, dt, self.device, name)
    return K.unary(fn, self, o, p0, p1, p2, compute=compute_type(dt))


def _unary_float(fn):
    """Forward of a floating op: integer/bool inputs promote to the default float dtype."""
    def forward(self, *, out=None):
        return _launch_unary(fn, self, out, _float_result(self.dtype))
    return forward


def _broadcast_out(out, dt, name, *ts):
    shape = ts[0].shape
    for t in ts[1:]:
        shape = G.broadcast_shapes(shape, t.shape)
    return _out(out, shape, dt, ts[0].device, name)


def _promoted(fn, name):
    """Forward of a binary op computed and stored in the promoted dtype."""
    def forward(self, other, *, out=None):
        dt = D.result_type(self, other)
        o = _broadcast_out(out, dt, name, self, other)
        return K.binary(fn, self, other, o, compute=compute_type(dt))
    return forward
