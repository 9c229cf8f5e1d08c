"""``tgrad.backends.cpu``: cpu kernels run in Triton's interpreter over numpy."""


def get_cpu_capability():
    """The SIMD level PyTorch's cpu kernels were built for; tgrad's are numpy's, which picks its own at run time."""
    return "DEFAULT"
