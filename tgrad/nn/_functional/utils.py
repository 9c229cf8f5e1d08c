"""Argument helpers shared by the convolution and pooling functions."""


def _ntuple(v, n, name="value"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and n > 1:
            return tuple(v) * n
        return tuple(int(a) for a in v)
    return (int(v),) * n
