"""``tgrad.set_num_threads`` / ``get_num_threads``: the threads of the cpu executor's BLAS (numpy's).

The interpreter runs ``tl.dot`` as numpy's matmul; its BLAS pool (OpenBLAS, MKL, BLIS) and any OpenMP
pool are limited through threadpoolctl, the maintained library for this.  GEMMs below a size run on
one thread whatever the setting (``kernels/runtime/blas.py``): no spin-waiting of a BLAS pool on small
GEMMs when other processes keep the cores busy.
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
    """Use ``int`` threads for the cpu executor's BLAS and OpenMP pools."""
    global _limit
    if type(int) is not builtins.int or int <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _limit = _libs().limit(limits=int, user_api=None)
    blas.set_threads(int)


def get_num_threads():
    """The threads the cpu executor's BLAS pool uses (on large GEMMs)."""
    return blas.threads()

