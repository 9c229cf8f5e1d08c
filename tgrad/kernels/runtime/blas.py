"""numpy's BLAS pool as the cpu executor uses it: one thread for small GEMMs, ``THREADS`` for large ones.

A tape's ``tl.dot`` is ``np.matmul`` on one tile.  A BLAS pool on a small GEMM costs more in waking and
spin-waiting threads than it saves, and when other processes keep the cores busy a worker that is not
scheduled stalls the whole GEMM (a 64x64x128 GEMM then takes milliseconds).  So a GEMM below ``SMALL``
multiply-adds runs on one thread; larger ones use ``THREADS`` (``tgrad.set_num_threads``; at start the
pool's own size: cores, or ``OPENBLAS_NUM_THREADS`` and the like).  The pool size is switched through
threadpoolctl only when it changes, so a run of small GEMMs pays nothing.
"""
import numpy as np
import threadpoolctl

SMALL = 1 << 23      # m * n * k below which one thread runs a GEMM (a 128x256x256 tile and up use the pool)

_ctl = None
_state = [None, None]     # [THREADS, the pool size set last]


def _controllers():
    global _ctl
    if _ctl is None:
        _ctl = [c for c in threadpoolctl.ThreadpoolController().lib_controllers if c.user_api == "blas"]
        n = max([c.num_threads for c in _ctl] or [1])
        _state[0] = _state[1] = n
    return _ctl


def threads():
    """The threads large GEMMs use (``tgrad.get_num_threads``)."""
    _controllers()
    return _state[0]


def set_threads(n):
    """Large GEMMs use ``n`` threads from now on."""
    _controllers()
    _state[0] = n
    _use(n)


def _use(n):
    if _state[1] != n:
        for c in _controllers():
            c.set_num_threads(n)
        _state[1] = n


def matmul_small(a, b, dtype):
    """``np.matmul(a, b, dtype=dtype)`` on one BLAS thread (the tape emits it for GEMMs below ``SMALL``).
    An outer product (K = 1, e.g. a convolution over one input channel) goes to ``np.dot``: np.matmul
    takes a slow non-BLAS loop there (10x), and one product per element rounds the same either way."""
    if _state[1] != 1:
        _use(1)
    if a.ndim == 2 and a.shape[1] == 1 and a.dtype == b.dtype == dtype:
        return np.dot(a, b)
    return np.matmul(a, b, dtype=dtype)


def matmul_large(a, b, dtype):
    """``np.matmul(a, b, dtype=dtype)`` on ``THREADS`` threads."""
    if _state[1] != _state[0]:
        _use(_state[0])
    return np.matmul(a, b, dtype=dtype)
