"""Padding layers over F.pad: ``ConstantPad``/``ZeroPad``/``ReflectionPad``/``ReplicationPad``/``CircularPad`` 1d-3d."""
from .. import functional as F
from .module import Module


class _PadNd(Module):
    """padding: an int (every side) or (left, right[, top, bottom[, front, back]]) as F.pad takes it."""

    _nd, _mode = 1, "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * (2 * self._nd)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pads the last dim with ``value``."""

    _mode = "constant"

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(ConstantPad1d):
    """Pads the last 2 dims with ``value``."""
    _nd = 2


class ConstantPad3d(ConstantPad1d):
    """Pads the last 3 dims with ``value``."""
    _nd = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ZeroPad1d):
    """Pads the last 2 dims with zeros."""
    _nd = 2


class ZeroPad3d(ZeroPad1d):
    """Pads the last 3 dims with zeros."""
    _nd = 3


class ReflectionPad1d(_PadNd):
    """Reflects the last dim about its edges (the edge not repeated)."""


class ReflectionPad2d(_PadNd):
    """Reflects the last 2 dims about their edges."""
    _nd = 2


class ReflectionPad3d(_PadNd):
    """Reflects the last 3 dims about their edges."""
    _nd = 3


class ReplicationPad1d(_PadNd):
    """Repeats the last dim's edge values."""
    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Repeats the last 2 dims' edge values."""
    _nd = 2


class ReplicationPad3d(ReplicationPad1d):
    """Repeats the last 3 dims' edge values."""
    _nd = 3


class CircularPad1d(_PadNd):
    """Wraps the last dim around."""
    _mode = "circular"


class CircularPad2d(CircularPad1d):
    """Wraps the last 2 dims around."""
    _nd = 2


class CircularPad3d(CircularPad1d):
    """Wraps the last 3 dims around."""
    _nd = 3
