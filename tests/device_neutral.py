"""Helpers that let a test written against PyTorch's cpu output check the same text under ``--device cuda``."""
import re

_DEVICE = re.compile(r",(\n *| )device='cuda:0'")


def neutral(text):
    """``text`` without the ``device='cuda:0'`` PyTorch prints for tensors on the first GPU."""
    return _DEVICE.sub("", text)


def neutral_repr(obj):
    return neutral(repr(obj))
