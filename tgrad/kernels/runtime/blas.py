"""numpy's BLAS as the cpu executor uses it: small GEMMs on the calling thread, large ones cut in pieces shared
out among ``THREADS`` threads.

A tape's ``tl.dot`` is ``np.matmul`` on one tile.  A GEMM below ``SMALL`` multiply-adds is one call on the
calling thread.  A larger one is cut along its larger output side into ``pieces()`` slices, how many set by its
shape alone, each slice one single-threaded ``np.matmul``: its bits depend on the shape only, not on the thread
count, the machine's load, eager or replay.  The slices go to ``THREADS`` threads (``tgrad.set_num_threads``; at
start the BLAS pool's own size: cores, or ``OPENBLAS_NUM_THREADS`` and the like), the caller and ``THREADS - 1``
workers, each taking the next slice left; the caller then sleeps until the workers' slices are done.

Why not the BLAS pool itself (OpenBLAS): its threads spin-wait on each other at every block of a GEMM, so when
other processes keep the cores busy one unscheduled thread stalls the whole GEMM (the 784-256-10 MLP step went
from 8 ms to 280 ms), and its bits change with its thread count.  Here no thread spins: a worker that is not
scheduled only leaves more slices to the caller.  And when the workers still make a GEMM slower than the caller
alone would have been (``_Backoff``), the caller stops waking them for a while.  numpy's BLAS pool is kept at
one thread: numpy's OpenBLAS (pthreads or sequential) directly, found through the symbols its extension module
links, any other BLAS through threadpoolctl (whose scan of every loaded library was ~40% of a fresh process's
first step of a small model).
"""
import ctypes
import itertools
import os
import threading
import time

import numpy as np
import threadpoolctl

PIECE = 1 << 22      # multiply-adds of a slice, at least (each slice re-packs the operand it shares)
SMALL = 2 * PIECE    # m * n * k below which a GEMM is one call (a 128x256x256 tile and up are cut)
MAX_PIECES = 8
ALIGN = 16           # slice widths: multiples of the BLAS kernels' tile widths

_ctl = None
_state = [None]      # [THREADS]


class _OpenBLAS:
    """numpy's OpenBLAS pool, as threadpoolctl's controller of it (``num_threads``, ``set_num_threads``)."""

    user_api = "blas"

    def __init__(self, get, set_):
        self._get, self._set = get, set_

    @property
    def num_threads(self):
        return self._get()

    def set_num_threads(self, n):
        self._set(n)


def _numpy_openblas():
    """[numpy's OpenBLAS pool] when numpy links an OpenBLAS with a pthreads (or no) pool, else None.  dlsym on
    numpy's extension module searches the libraries it links: no scan of the process's libraries.  (An OpenMP
    OpenBLAS sizes its pool per calling thread: threadpoolctl's.)"""
    try:
        from numpy._core import _multiarray_umath
        lib = ctypes.CDLL(_multiarray_umath.__file__, mode=os.RTLD_NOLOAD)
    except (ImportError, AttributeError, OSError):
        return None
    for pre, suf in itertools.product(("scipy_", ""), ("64_", "", "_64")):
        get = getattr(lib, f"{pre}openblas_get_num_threads{suf}", None)
        set_ = getattr(lib, f"{pre}openblas_set_num_threads{suf}", None)
        par = getattr(lib, f"{pre}openblas_get_parallel{suf}", None)
        if get is not None and set_ is not None and par is not None:
            get.restype = par.restype = ctypes.c_int
            set_.argtypes, set_.restype = [ctypes.c_int], None
            return [_OpenBLAS(get, set_)] if par() in (0, 1) else None
    return None


def _controllers():
    """numpy's BLAS pools, set to one thread; THREADS starts at their size."""
    global _ctl
    if _ctl is None:
        _ctl = _numpy_openblas()
        if _ctl is None:
            _ctl = [c for c in threadpoolctl.ThreadpoolController().lib_controllers if c.user_api == "blas"]
        if _state[0] is None:
            _state[0] = max([c.num_threads for c in _ctl] or [1])
        for c in _ctl:
            c.set_num_threads(1)
    return _ctl


def threads():
    """The threads large GEMMs use (``tgrad.get_num_threads``)."""
    _controllers()
    return _state[0]


def set_threads(n):
    """Large GEMMs use ``n`` threads from now on."""
    _controllers()
    _state[0] = n


def pieces(m, k, n, batch=1):
    """How a GEMM (batch, m, k) @ (batch, k, n) is cut: None (one call), or (side, starts): the output's
    columns (side -1) or rows (side -2) from each start to the next (the last to the end).  The larger of
    m and n is cut (the other operand, re-packed by every slice, is the smaller); at least ``PIECE``
    multiply-adds a slice, at most ``MAX_PIECES`` slices, widths multiples of ``ALIGN``."""
    c = min(MAX_PIECES, batch * m * k * n // PIECE)
    if c < 2 or k == 1:
        return None
    side, size = (-1, n) if n >= m else (-2, m)
    w = -(-size // c)
    w = -(-w // ALIGN) * ALIGN
    return (side, range(0, size, w)) if w < size else None


def plan(m, k, n, batch=1):
    """How the tape and the interpreter multiply (batch, m, k) @ (batch, k, n): (one call on the calling thread,
    ``pieces``).  The cut decides bits (the BLAS's kernels go by a GEMM's sizes)."""
    small = m * k * n < SMALL
    return small, None if small else pieces(m, k, n, batch)


class _Backoff:
    """Whether to wake the workers for the next GEMM.  After a GEMM whose wall time exceeded the caller's
    alone (its own slices' time scaled to all slices: the workers cost more than they gave, e.g. not
    scheduled on a busy machine), the workers rest ``period`` seconds: ``MIN`` first, doubled at each such
    GEMM up to ``MAX``, halved (to 0 below ``MIN``) at each GEMM where they paid."""
    MIN, MAX = 0.05, 2.0

    def __init__(self, clock=time.perf_counter):
        self.clock, self.period, self.until = clock, 0.0, 0.0

    def wake(self):
        return self.clock() >= self.until

    def report(self, wall, alone):
        if wall > alone:
            self.period = min(self.MAX, max(self.MIN, 2 * self.period))
            self.until = self.clock() + self.period
        else:
            self.period = self.period / 2 if self.period >= 2 * self.MIN else 0.0


class _Job:
    """Slices (a, b, out, dtype) taken in turn by whoever calls ``work``; ``done`` is released at the last."""

    def __init__(self, slices):
        self.slices, self.left, self.error = slices, len(slices), None
        self.take = itertools.count().__next__      # atomic under the GIL
        self.lock, self.done = threading.Lock(), threading.Lock()
        self.done.acquire()

    def work(self):
        """Run slices until none is left; returns how many this thread ran."""
        ran = 0
        while True:
            i = self.take()
            if i >= len(self.slices):
                return ran
            a, b, out, dtype = self.slices[i]
            try:
                np.matmul(a, b, out=out, dtype=dtype)
            except BaseException as e:  # noqa: BLE001 (re-raised by the caller)
                self.error = e
            ran += 1
            with self.lock:
                self.left -= 1
                last = self.left == 0
            if last:
                self.done.release()


class _Pool:
    """Daemon worker threads, each waiting on ``go`` and then working on the current job."""

    def __init__(self):
        self.go, self.job, self.n = threading.Semaphore(0), None, 0
        self.backoff = _Backoff()

    def run(self, slices, nthreads):
        job = _Job(slices)
        helpers = min(nthreads, len(slices)) - 1
        wake = helpers > 0 and self.backoff.wake()
        if wake:
            while self.n < helpers:
                threading.Thread(target=self._loop, daemon=True, name="tgrad-blas").start()
                self.n += 1
            self.job = job
            for _ in range(helpers):
                self.go.release()
        t0 = time.perf_counter()
        mine = job.work()
        t1 = time.perf_counter()
        job.done.acquire()
        self.job = None
        if wake and mine:
            self.backoff.report(time.perf_counter() - t0, (t1 - t0) * len(slices) / mine)
        if job.error is not None:
            raise job.error

    def _loop(self):
        go = self.go
        while True:
            go.acquire()
            job = self.job
            if job is not None:
                job.work()


_pool = None


def _forget_pool():
    global _pool
    _pool = None        # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_pool)


def matmul_small(a, b, dtype):
    """``np.matmul(a, b, dtype=dtype)`` on the calling thread (the tape emits it for GEMMs below ``SMALL``).
    An outer product (K = 1, e.g. a convolution over one input channel) goes to ``np.dot``: np.matmul
    takes a slow non-BLAS loop there (10x), and one product per element rounds the same either way."""
    if _ctl is None:
        _controllers()
    if a.ndim == 2 and a.shape[1] == 1 and a.dtype == b.dtype == dtype:
        return np.dot(a, b)
    return np.matmul(a, b, dtype=dtype)


_whole = matmul_small     # (matmul_large's uncut GEMMs)


def matmul(a, b, dtype):
    """``matmul_small`` or ``matmul_large`` by size, as the tape chooses (the interpreter's ``tl.dot``: a
    traced launch gives the bits its tape will)."""
    m, k = a.shape[-2:]
    return (matmul_small if m * k * b.shape[-1] < SMALL else matmul_large)(a, b, dtype)


def matmul_large(a, b, dtype):
    """``np.matmul(a, b, dtype=dtype)`` cut as ``pieces`` says, the slices run on ``THREADS`` threads."""
    global _pool
    if _ctl is None:
        _controllers()
    m, k = a.shape[-2:]
    n = b.shape[-1]
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    cut = pieces(m, k, n, int(np.prod(lead)))
    if cut is None:
        return _whole(a, b, dtype)
    out = np.empty(lead + (m, n), dtype)
    side, starts = cut
    ends = list(starts[1:]) + [None]
    if side == -1:
        slices = [(a, b[..., s:e], out[..., s:e], dtype) for s, e in zip(starts, ends)]
    else:
        slices = [(a[..., s:e, :], b, out[..., s:e, :], dtype) for s, e in zip(starts, ends)]
    if _pool is None:
        _pool = _Pool()
    _pool.run(slices, _state[0])
    return out
