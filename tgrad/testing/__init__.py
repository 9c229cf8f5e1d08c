"""Test support shipped with tgrad: the op database (OpInfo) used by the op tests and the AOT check."""
import re as _re

_DEVICE_PART = _re.compile(r", device='cuda:\d+'")


def neutral_repr(t):
    """``repr(t)`` without the ``device='cuda:N'`` part a cuda tensor prints: one expected string for a test
    that runs under any ``--device``."""
    return _DEVICE_PART.sub("", repr(t))
