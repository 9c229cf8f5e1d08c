"""``tgrad.set_num_threads`` / ``get_num_threads``: the threads of the cpu executor's GEMMs.

The interpreter runs ``tl.dot`` as numpy's matmul.  GEMMs below a size run on the calling thread; larger
ones are cut in slices shared out among ``get_num_threads()`` threads (``kernels/runtime/blas.py``), numpy's
own BLAS pool (OpenBLAS, MKL, BLIS) kept at one thread: nobody spin-waits when other processes keep the cores
busy, and the bits do not depend on the thread count.  Any OpenMP pool is limited through threadpoolctl, the
maintained library for this.
"""
import builtins

import threadpoolctl

from .kernels.runtime import blas

_controller = None
_limit = None       # the threadpoolctl limiter of the last set_num_threads (kept: the limit lasts)


def _libs():
    global _controller
    if _controller is None:
        import numpy  # noqa: F401  (loads the BLAS that threadpoolctl finds)
        _controller = threadpoolctl.ThreadpoolController()
    return _controller


def set_num_threads(int):  # noqa: A002 (PyTorch's parameter name)
    """Use ``int`` threads for the cpu executor's large GEMMs and OpenMP pools."""
    global _limit
    if type(int) is not builtins.int or int <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _limit = _libs().limit(limits=int, user_api="openmp")
    blas.set_threads(int)


def get_num_threads():
    """The threads the cpu executor's large GEMMs use."""
    return blas.threads()

