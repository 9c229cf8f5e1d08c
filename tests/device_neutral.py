"""Helpers that let a test written against PyTorch's cpu output check the same text under ``--device cuda``."""
import re

_DEVICE = re.compile(r",(\n *| )device='cuda:0'")


def neutral_repr(obj):
    """``repr(obj)`` without the ``device='cuda:0'`` PyTorch prints for tensors on the first GPU."""
    return _DEVICE.sub("", repr(obj))
