"""as_strided and the ops autograd records for views: as_strided's backward (``restride``) and the backward
of an in-place op on a view (``copy_slices``, PyTorch's CopySlices / AsStridedScatterBackward0).

Views launch nothing (a new geometry on the same storage); ``restride`` and ``copy_slices`` are strided
copies and scatter-adds on kernels/elementwise.py.
"""
import itertools

from ..kernels import elementwise as KE
from ..tensor import empty
from . import Op, call


# A geometry is (size, stride, storage_offset) in storage elements.
# ``restride`` scatter-adds a tensor into a zeroed scratch buffer at one geometry and reads the buffer
# back at another: with (view -> input) it is as_strided's backward, and with the geometries swapped
# it is its own backward.  ``copy_slices`` is the backward of an in-place op on a view (CopySlices):
# the base's gradient with the view's region replaced.
def as_strided_forward(self, *, size, stride, storage_offset=None):
    off = self.storage_offset() if storage_offset is None else storage_offset
    return self._view_of(tuple(size), tuple(stride), off)


def as_strided_backward(ctx, grad):
    m, a = ctx.input_meta[0], ctx.attrs
    off = m.offset if a.get("storage_offset") is None else a["storage_offset"]
    return (call("restride", grad, src_geom=(tuple(a["size"]), tuple(a["stride"]), off),
                           dst_geom=(m.shape, m.stride, m.offset)),)


def _extent(geom):
    size, stride, off = geom
    if 0 in size:
        return off
    return off + sum((s - 1) * st for s, st in zip(size, stride)) + 1


def overlaps(size, stride):
    """True unless (size, stride) is provably free of internal overlap (PyTorch's cheap test)."""
    reach = 0
    for st, s in sorted((st, s) for s, st in zip(size, stride) if s > 1):
        if st <= reach:
            return True
        reach += (s - 1) * st
    return False


def _scratch(geoms, like):
    """A zeroed 1-D buffer covering every geometry, and the storage offset of its element 0."""
    lo = min(g[2] for g in geoms)
    buf = empty((max(max(_extent(g) for g in geoms) - lo, 1),), like.dtype, like.device)
    return KE.fill(buf, 0), lo


def _at(buf, geom, lo):
    return buf._view_of(geom[0], geom[1], geom[2] - lo)


def _scatter_add(src, dst):
    """dst += src; where dst hits a location several times, one launch per index of all but one dim."""
    if dst.dtype.is_complex:            # the float pairs (the trailing pair dim never overlaps)
        dst, src = _float_pairs(dst), _float_pairs(src)
    if not overlaps(dst.shape, dst.stride()):
        KE.binary(KE.add_fn, dst, src, dst)
        return
    size, ds, ss = dst.shape, dst.stride(), src.stride()
    free = [i for i in range(len(size)) if ds[i] != 0]
    d = max(free, key=lambda i: size[i]) if free else None
    rest = [i for i in range(len(size)) if i != d]
    line = ((size[d],), (ds[d],), (ss[d],)) if d is not None else ((), (), ())
    for idx in itertools.product(*(range(size[i]) for i in rest)):
        dv = dst._view_of(line[0], line[1], dst.storage_offset() + sum(k * ds[i] for k, i in zip(idx, rest)))
        sv = src._view_of(line[0], line[2], src.storage_offset() + sum(k * ss[i] for k, i in zip(idx, rest)))
        KE.binary(KE.add_fn, dv, sv, dv)


def _float_pairs(t):
    """complex t's (..., 2) floats as a Tensor view (view_as_real without autograd)."""
    return t._view_of(t.shape + (2,), tuple(2 * s for s in t.stride()) + (1,), 2 * t.storage_offset(),
                      t.dtype.to_real())


def restride_forward(src, *, src_geom, dst_geom):
    """out (size dst_geom[0]) = buffer read at dst_geom, after src was scatter-added into it at src_geom."""
    buf, lo = _scratch((src_geom, dst_geom), src)
    _scatter_add(src, _at(buf, src_geom, lo))
    return KE.copy(_at(buf, dst_geom, lo), empty(dst_geom[0], src.dtype, src.device))


def restride_backward(ctx, grad):
    a = ctx.attrs
    return (call("restride", grad, src_geom=a["dst_geom"], dst_geom=a["src_geom"]),)


def copy_slices_forward(self, src, *, self_geom, src_geom):
    """self laid out at self_geom with the region at src_geom overwritten by src."""
    buf, lo = _scratch((self_geom, src_geom), self)
    KE.copy(self, _at(buf, self_geom, lo))
    KE.copy(src, _at(buf, src_geom, lo))
    return KE.copy(_at(buf, self_geom, lo), empty(self_geom[0], self.dtype, self.device))


def copy_slices_backward(ctx, grad):
    a = ctx.attrs
    need_self, need_src = ctx.needs_input_grad
    g_self = g_src = None
    if need_self:
        g_self = call("copy_slices", grad, grad.new_zeros(a["src_geom"][0]), **a)
    if need_src:
        g_src = call("restride", grad, src_geom=a["self_geom"], dst_geom=a["src_geom"])
    return g_self, g_src


AS_STRIDED_ = Op("as_strided_", as_strided_forward, as_strided_backward, "AsStridedBackward1", view=True,
                 variants=("method", "function"))
AS_STRIDED = Op("as_strided", as_strided_forward, as_strided_backward, "AsStridedBackward0", view=True,
                variants=("method",), inplace=True)
RESTRIDE = Op("restride", restride_forward, restride_backward, "AsStridedBackwardBackward0")
COPY_SLICES = Op("copy_slices", copy_slices_forward, copy_slices_backward, "AsStridedScatterBackward0",
                 inputs=("self", "src"))


ENTRIES = [AS_STRIDED_, AS_STRIDED, RESTRIDE, COPY_SLICES]
