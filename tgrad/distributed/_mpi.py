"""MPI backend: collectives on cpu tensors through mpi4py, on the tensors' own memory.

Each tensor reaches MPI as ``MPI.buffer.fromaddress(t.data_ptr(), t.nbytes)``: no copy through a
Python object. Every operation is nonblocking (``Iallreduce``, ``Ibcast``, ...); ``Work.wait`` polls
it, so a wait can stop at the group's timeout, and a peer's death (reported by MPI's fault tolerance,
ULFM, which ``python -m tgrad.distributed.run`` turns on) becomes an error naming the failed rank.
float16 / bfloat16 reductions use MPI user operations over numpy (MPI has no such types); bool
reductions run on bytes (SUM as MAX, PRODUCT as MIN: logical or / and, as PyTorch's NCCL backend).
"""
import datetime
import time

import numpy as np

from .. import dtypes as D
from .distributed_c10d import DistBackendError, ReduceOp, Work

MPI = None
_INSTALL = 'pip install "tgrad[distributed]"'


def load():
    """Import mpi4py (serialized threads: only one thread talks to MPI at a time)."""
    global MPI
    if MPI is None:
        try:
            import mpi4py
        except ImportError:
            raise RuntimeError(f"the MPI backend needs mpi4py and an MPI library: {_INSTALL}") from None
        mpi4py.rc.thread_level = "serialized"
        try:
            from mpi4py import MPI as mod
        except RuntimeError as e:        # mpi4py without a libmpi
            raise RuntimeError(f"the MPI backend cannot load an MPI library ({e}): {_INSTALL}") from None
        MPI = mod
    return MPI


_TYPES = {D.float32: "FLOAT", D.float64: "DOUBLE", D.int8: "INT8_T", D.int16: "INT16_T", D.int32: "INT32_T",
          D.int64: "INT64_T", D.uint8: "UINT8_T", D.bool_: "UINT8_T", D.float16: "UINT16_T", D.bfloat16: "UINT16_T"}
_NP_FN = {0: np.add, 2: np.multiply, 3: np.minimum, 4: np.maximum}
_USER_OPS = {}


def _user_op(dtype, code):
    """An MPI operation reducing 16-bit floats with numpy (each step rounded to the dtype, as a cpu loop)."""
    key = (dtype, code)
    if key not in _USER_OPS:
        npd, fn = dtype.np, _NP_FN[code]
        def reduce(inbuf, inoutbuf, datatype):
            out = np.frombuffer(inoutbuf, npd)
            out[...] = fn(np.frombuffer(inbuf, npd), out)
        _USER_OPS[key] = MPI.Op.Create(reduce, commute=True)
    return _USER_OPS[key]


def _reduce_args(dtype, op):
    """(MPI datatype, MPI op, average after?) of reduction ``op`` on ``dtype``."""
    code = op.value
    if dtype is D.bool_:
        if op is ReduceOp.AVG:
            raise ValueError("Cannot use ReduceOp.AVG with boolean inputs")
        code = {0: 4, 2: 3}.get(code, code)
    avg = code == 1
    code = 0 if avg else code
    if dtype in (D.float16, D.bfloat16):
        mop = _user_op(dtype, code)
    else:
        mop = (MPI.SUM, None, MPI.PROD, MPI.MIN, MPI.MAX)[code]
    return getattr(MPI, _TYPES[dtype]), mop, avg


def _buf(t):
    return MPI.buffer.fromaddress(t.data_ptr(), t.nbytes) if t.nbytes else MPI.buffer.fromaddress(0, 0)


def _seconds(timeout):
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout


class MPIBackend:
    name = "mpi"

    def __init__(self, comm, timeout):
        self.comm, self.timeout = comm, timeout
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        world = MPI.COMM_WORLD.Get_group()
        self.global_ranks = MPI.Group.Translate_ranks(comm.Get_group(), list(range(self.size)), world)

    @classmethod
    def world(cls, timeout):
        load()
        comm = MPI.COMM_WORLD.Dup()
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        return cls(comm, timeout)

    def split(self, ranks, timeout):
        comm = self.comm.Create(self.comm.Get_group().Incl(ranks))
        return None if comm == MPI.COMM_NULL else MPIBackend(comm, timeout)

    def free(self):
        try:
            self.comm.Free()
        except Exception:
            pass

    def check_device(self, t):
        if t.device.type != "cpu":
            raise RuntimeError("CUDA tensor detected and the MPI used doesn't have CUDA-aware MPI support")

    # ------------------------------------------------------------ waiting, failures
    def _failure(self, e, what):
        me = self.global_ranks[self.rank]
        cls = e.Get_error_class()
        if cls in (MPI.ERR_PROC_FAILED, getattr(MPI, "ERR_PROC_FAILED_PENDING", -1), MPI.ERR_REVOKED):
            try:
                self.comm.Revoke()       # the other survivors stop too, even those not talking to the dead rank
            except Exception:
                pass
            try:
                g = self.comm.Get_failed()
                failed = [self.global_ranks[r] for r in range(self.size)
                          if r in MPI.Group.Translate_ranks(g, list(range(g.Get_size())), self.comm.Get_group())]
            except Exception:
                failed = []
            who = ("rank " + ", ".join(map(str, failed))) if failed else "another rank"
            return DistBackendError(f"[rank {me}] {what} failed: {who} of the process group exited or was killed "
                                    f"(MPI: {e.Get_error_string()})")
        return DistBackendError(f"[rank {me}] {what} failed: MPI error: {e.Get_error_string()}")

    def _wait(self, reqs, what, timeout, statuses=None):
        timeout = self.timeout if timeout is None else _seconds(timeout)
        start = time.monotonic()
        try:
            while not self._test(reqs, statuses):
                waited = time.monotonic() - start
                if waited > timeout:
                    me = self.global_ranks[self.rank]
                    raise DistBackendError(
                        f"[rank {me}] {what} timed out after {timeout:g} s waiting for the other ranks of the "
                        f"process group (ranks {self.global_ranks}); a rank is stuck, or died without MPI fault "
                        f"tolerance (start with python -m tgrad.distributed.run to name failed ranks)")
                if waited > 0.002:
                    time.sleep(0.00005)
        except MPI.Exception as e:
            raise self._failure(e, what) from None

    def _work(self, reqs, what, then=None, statuses=None):
        return Work(lambda timeout: self._wait(reqs, what, timeout, statuses),
                    lambda: self._call(what, self._test, reqs, statuses), then)

    @staticmethod
    def _test(reqs, statuses=None):
        """All of ``reqs`` done? (Tested one by one: a failed request raises its own error class.)"""
        for k, req in enumerate(reqs):
            if req and not req.Test(statuses[k] if statuses else None):
                return False
        return True

    def _average(self, t):
        if t.dtype.is_floating_point:
            t.div_(self.size)
        else:
            t.div_(self.size, rounding_mode="trunc")

    def _call(self, what, fn, *args):
        try:
            return fn(*args)
        except MPI.Exception as e:
            raise self._failure(e, what) from None

    # ------------------------------------------------------------ operations (group ranks)
    def allgather_host(self, arr, timeout, what="collective"):
        out = np.empty((self.size,) + arr.shape, arr.dtype)
        what = f"{what} (its check of the shapes on every rank)"
        self._wait([self._call(what, self.comm.Iallgather, arr, out)], what, timeout)
        return out

    def allreduce(self, t, op):
        dt, mop, avg = _reduce_args(t.dtype, op)
        req = self._call("all_reduce", self.comm.Iallreduce, MPI.IN_PLACE, [_buf(t), t.numel(), dt], mop)
        return self._work([req], "all_reduce", (lambda: self._average(t)) if avg else None)

    def broadcast(self, t, root):
        return self._work([self._call("broadcast", self.comm.Ibcast, [_buf(t), MPI.BYTE], root)], "broadcast")

    def reduce(self, t, root, op):
        dt, mop, avg = _reduce_args(t.dtype, op)
        buf = [_buf(t), t.numel(), dt]
        args = (MPI.IN_PLACE, buf) if self.rank == root else (buf, None)
        req = self._call("reduce", self.comm.Ireduce, *args, mop, root)
        return self._work([req], "reduce", (lambda: self._average(t)) if avg and self.rank == root else None)

    def allgather(self, out, t):
        inplace = out.data_ptr() + self.rank * t.nbytes == t.data_ptr()
        req = self._call("all_gather", self.comm.Iallgather, MPI.IN_PLACE if inplace else [_buf(t), MPI.BYTE],
                         [_buf(out), MPI.BYTE])
        return self._work([req], "all_gather")

    def gather(self, flat, t, root):
        req = self._call("gather", self.comm.Igather, [_buf(t), MPI.BYTE],
                         [_buf(flat), MPI.BYTE] if flat is not None else None, root)
        return self._work([req], "gather")

    def scatter(self, t, flat, root):
        req = self._call("scatter", self.comm.Iscatter, [_buf(flat), MPI.BYTE] if flat is not None else None,
                         [_buf(t), MPI.BYTE], root)
        return self._work([req], "scatter")

    def reduce_scatter(self, out, t, op):
        dt, mop, avg = _reduce_args(t.dtype, op)
        req = self._call("reduce_scatter", self.comm.Ireduce_scatter_block, [_buf(t), dt], [_buf(out), dt],
                         mop)
        return self._work([req], "reduce_scatter", (lambda: self._average(out)) if avg else None)

    def barrier(self):
        return self._work([self._call("barrier", self.comm.Ibarrier)], "barrier")

    def send(self, t, peer, tag):
        return self._work([self._call("send", self.comm.Isend, [_buf(t), MPI.BYTE], peer, tag)], "send")

    def recv(self, t, peer, tag):
        status = MPI.Status()
        src = MPI.ANY_SOURCE if peer is None else peer
        req = self._call("recv", self.comm.Irecv, [_buf(t), MPI.BYTE], src, tag)
        work = None
        def check():
            n = status.Get_count(MPI.BYTE)
            if n != t.nbytes:
                raise RuntimeError(f"recv: the message from rank {self.global_ranks[status.Get_source()]} has "
                                   f"{n} bytes, the receiving tensor {t.nbytes} (shapes or dtypes differ)")
            work._source = status.Get_source()
        work = self._work([req], "recv", check, [status])
        return work
