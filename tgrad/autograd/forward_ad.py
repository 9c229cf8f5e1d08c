"""``tgrad.autograd.forward_ad``: PyTorch's forward-mode API (``dual_level``, ``make_dual``, ``unpack_dual``).

tgrad has no per-op tangent rules: a dual tensor is its primal tracked by reverse mode (``requires_grad``), and
``unpack_dual(y)`` computes y's tangent when asked, by the double-vjp trick on the recorded graph:
g(u) = J^T u is linear in u, so d/du <g(u), v> = J v, exact to rounding (two backward passes per unpack).
Differences from PyTorch: a dual tensor requires grad (operations on it must be recorded: under ``no_grad``
they carry no tangent), a tangent costs two backward passes at ``unpack_dual`` time, and it needs the recorded
graph (unpack before a ``backward()`` that frees it)."""
from collections import namedtuple

from . import engine as _engine
from .grad_mode import enable_grad

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

_levels = []        # one list of (dual tensor, tangent) per open level, innermost last


class UnpackedDualTensor(namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """(primal, tangent) of ``unpack_dual``; tangent is None for a tensor with no forward gradient."""


def enter_dual_level():
    """Open a new forward-AD level and return its index (only one level at a time, as PyTorch)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append([])
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    """Close ``level`` (default: the innermost); its dual tensors lose their tangents."""
    if level is None:
        level = len(_levels) - 1
    if level != len(_levels) - 1:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This "
                           "is not supported.")
    _levels.pop()


class dual_level:
    """``with dual_level():`` the context in which dual tensors are made and unpacked."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()


def _level(level):
    if level is None:
        level = len(_levels) - 1
    if level < 0 or level >= len(_levels):
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    return _levels[level]


def make_dual(tensor, tangent, *, level=None):
    """A tensor equal to ``tensor`` whose forward gradient is ``tangent`` (same shape)."""
    duals = _level(level)
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    with enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach().requires_grad_()
    duals.append((dual, tangent.detach()))
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent): the tangent J v of ``tensor`` with respect to every dual tensor of the level."""
    if not _levels:
        return UnpackedDualTensor(tensor, None)
    duals = _level(level)
    for d, t in duals:
        if d is tensor:
            return UnpackedDualTensor(tensor, t)
    if not getattr(tensor, "requires_grad", False) or not duals:
        return UnpackedDualTensor(tensor, None)
    with enable_grad():
        u = tensor.detach().new_zeros(tensor.shape).requires_grad_()
        gs = _engine.grad([tensor], [d for d, _ in duals], [u], create_graph=True, allow_unused=True)
        used = [(g, t) for g, (_, t) in zip(gs, duals) if g is not None]
        if not used:
            return UnpackedDualTensor(tensor, None)
        live = [(g, t) for g, t in used if g.requires_grad]
        if not live:        # gradients that do not depend on u: J = 0
            return UnpackedDualTensor(tensor, tensor.detach().new_zeros(tensor.shape))
        (jv,) = _engine.grad([g for g, _ in live], [u], [t for _, t in live], retain_graph=True,
                             allow_unused=True)
    tangent = tensor.detach().new_zeros(tensor.shape) if jv is None else jv.detach()
    return UnpackedDualTensor(tensor, tangent)
