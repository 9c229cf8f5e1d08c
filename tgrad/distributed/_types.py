"""The types the process groups and their backends share: errors, ``ReduceOp``, ``Backend``, ``Work``, and
``ThreadBackend``: the worker thread on which the cpu backends (MPI, gloo) run their operations in issue order."""
import datetime
import queue
import threading

from .. import dtypes as D


class DistError(RuntimeError):
    """Base of the errors raised by ``tgrad.distributed``."""


class DistBackendError(DistError):
    """A backend failed: a peer died, or an operation timed out."""


class DistNetworkError(DistError):
    """A connection could not be made (the rendezvous with the other ranks)."""


class DistStoreError(DistError):
    """The rendezvous store failed or timed out (rank 0 waiting for the other ranks)."""


class ReduceOp:
    """``ReduceOp.SUM`` ... : the reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``."""

    class RedOpType:
        def __init__(self, name, code):
            self.name, self.value = name, code

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

        def __reduce__(self):
            return (getattr, (ReduceOp, self.name))

    SUM = RedOpType("SUM", 0)
    AVG = RedOpType("AVG", 1)
    PRODUCT = RedOpType("PRODUCT", 2)
    MIN = RedOpType("MIN", 3)
    MAX = RedOpType("MAX", 4)


class Backend(str):
    """``Backend.MPI == "mpi"``, ``Backend.GLOO == "gloo"``, ``Backend.NCCL == "nccl"``."""
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            raise ValueError(f"Invalid backend: '{name}' (tgrad has 'mpi' and 'gloo' for cpu tensors and 'nccl' for "
                             f"cuda)")
        return str.__new__(cls, value)


class Work:
    """Handle of an operation started with ``async_op=True``: ``wait()`` blocks until it is done (and raises
    the backend's error, e.g. a failed peer or the timeout); ``is_completed()`` polls."""

    def __init__(self, wait_fn, test_fn=None, then=None):
        self._wait_fn, self._test_fn, self._then, self._done = wait_fn, test_fn, then, False

    def _finish(self):
        self._done = True
        if self._then is not None:
            then, self._then = self._then, None
            then()

    def wait(self, timeout=None):
        if not self._done:
            self._wait_fn(timeout)
            self._finish()
        return True

    def is_completed(self):
        if not self._done and self._test_fn is not None and self._test_fn():
            self._finish()
        return self._done

    def is_success(self):
        return self.is_completed()


def reduction(dtype, op):
    """(code, average after?) of reduction ``op`` on ``dtype``: code 0 sum, 2 product, 3 min, 4 max (AVG is a sum,
    divided after). bool reduces bytes: SUM as MAX, PRODUCT as MIN (logical or / and, as PyTorch's NCCL backend)."""
    code = op.value
    if dtype is D.bool_:
        if op is ReduceOp.AVG:
            raise ValueError("Cannot use ReduceOp.AVG with boolean inputs")
        code = {0: 4, 2: 3}.get(code, code)
    return (0, True) if code == 1 else (code, False)


def _seconds(timeout):
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout


class ThreadBackend:
    """Base of the cpu backends: one worker thread (shared by all groups of the process) runs every operation in
    the order it was issued (the same on every rank), so an ``async_op`` operation progresses while the caller
    computes (DDP's gradient buckets during backward). Subclasses set ``rank``, ``size``, ``global_ranks``,
    ``timeout`` and may map their exceptions (``_error``) and explain a timeout (``stuck_hint``)."""
    stuck_hint = "a rank is stuck or died"

    def _error(self, e, what):
        return e

    def _submit(self, what, fn, then=None):
        """Queue ``fn()`` for the worker thread; a Work that waits for it (at most the group's timeout)."""
        done, box = threading.Event(), []
        def run():
            try:
                fn()
            except BaseException as e:
                box.append(self._error(e, what))
            done.set()
        _worker().put(run)
        def wait(timeout):
            timeout = self.timeout if timeout is None else _seconds(timeout)
            if not done.wait(timeout):
                me = self.global_ranks[self.rank]
                raise DistBackendError(
                    f"[rank {me}] {what} timed out after {timeout:g} s waiting for the other ranks of the process "
                    f"group (ranks {self.global_ranks}); {self.stuck_hint}")
            if box:
                raise box[0]
        return Work(wait, done.is_set, then)

    def _average(self, t):
        if t.dtype.is_floating_point:
            t.div_(self.size)
        else:
            t.div_(self.size, rounding_mode="trunc")


_QUEUE = None


def _worker():
    """The queue of the worker thread (started on first use; a daemon, idle between operations)."""
    global _QUEUE
    if _QUEUE is None:
        q = queue.SimpleQueue()
        def loop():
            while True:
                q.get()()
        threading.Thread(target=loop, name="tgrad-dist", daemon=True).start()
        _QUEUE = q
    return _QUEUE


for _cls in (DistError, DistBackendError, DistNetworkError, DistStoreError, ReduceOp, Backend, Work):
    _cls.__module__ = "tgrad.distributed"      # PyTorch's names: torch.distributed.DistBackendError ...
