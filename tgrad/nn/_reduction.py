"""PyTorch's mapping of the deprecated ``size_average``/``reduce`` loss arguments to ``reduction``."""
import warnings


def _legacy_reduction(size_average, reduce):
    """PyTorch's mapping of the deprecated (size_average, reduce) pair to a reduction string."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret
