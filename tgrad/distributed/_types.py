"""The types the process groups and their backends share: errors, ``ReduceOp``, ``Backend``, ``Work``."""


class DistError(RuntimeError):
    """Base of the errors raised by ``tgrad.distributed``."""


class DistBackendError(DistError):
    """A backend failed: a peer died, or an operation timed out."""


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
    """``Backend.MPI == "mpi"``, ``Backend.NCCL == "nccl"``."""
    MPI = "mpi"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            raise ValueError(f"Invalid backend: '{name}' (tgrad has 'mpi' for cpu tensors and 'nccl' for cuda)")
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


for _cls in (DistError, DistBackendError, ReduceOp, Backend, Work):
    _cls.__module__ = "tgrad.distributed"      # PyTorch's names: torch.distributed.DistBackendError ...
