"""MPI backend: collectives on cpu tensors through mpi4py, on the tensors' own memory.

Each tensor reaches MPI as ``MPI.buffer.fromaddress(t.data_ptr(), t.nbytes)``: no copy through a
Python object. As PyTorch's ProcessGroupMPI, one worker thread makes every MPI call, in the order the
operations were issued (the same on every rank); the calls are MPI's blocking ones (``Allreduce``...,
its fastest algorithms; mpi4py releases the GIL inside them), so an ``async_op`` operation progresses
while the caller computes (DDP's gradient buckets during backward). ``Work.wait`` waits for the worker
at most the group's timeout; a peer's death, reported by MPI's fault tolerance (ULFM, which
``python -m tgrad.distributed.run`` turns on), becomes an error naming the failed rank.
float16 / bfloat16 reductions use MPI user operations over numpy (MPI has no such types); bool
reductions run on bytes (SUM as MAX, PRODUCT as MIN: logical or / and, as PyTorch's NCCL backend).
"""
import numpy as np

from .. import dtypes as D
from ._types import DistBackendError, ThreadBackend, reduction

MPI = None
_INSTALL = 'pip install "tgrad[distributed]"'


def load():
    """Import mpi4py (MPI_THREAD_MULTIPLE: the worker thread talks to MPI, the main thread sets up communicators)."""
    global MPI
    if MPI is None:
        try:
            import mpi4py
        except ImportError:
            raise RuntimeError(f"the MPI backend needs mpi4py and an MPI library: {_INSTALL}") from None
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
    code, avg = reduction(dtype, op)
    if dtype in (D.float16, D.bfloat16):
        mop = _user_op(dtype, code)
    else:
        mop = (MPI.SUM, None, MPI.PROD, MPI.MIN, MPI.MAX)[code]
    return getattr(MPI, _TYPES[dtype]), mop, avg


def _buf(t):
    return MPI.buffer.fromaddress(t.data_ptr(), t.nbytes) if t.nbytes else MPI.buffer.fromaddress(0, 0)


class MPIBackend(ThreadBackend):
    name = "mpi"
    stuck_hint = ("a rank is stuck, or died without MPI fault tolerance (start with python -m tgrad.distributed.run "
                  "to name failed ranks)")

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
        """The backend of a sub-group (None on ranks outside it); made by the worker, after queued operations."""
        box = []
        self._submit("new_group", lambda: box.append(self.comm.Create(self.comm.Get_group().Incl(ranks)))).wait()
        return None if box[0] == MPI.COMM_NULL else MPIBackend(box[0], timeout)

    def free(self):
        try:
            self._submit("destroy_process_group", self.comm.Free).wait()
        except Exception:
            pass

    def check_device(self, t):
        if t.device.type != "cpu":
            raise RuntimeError("CUDA tensor detected and the MPI used doesn't have CUDA-aware MPI support")

    # ------------------------------------------------------------ the worker, failures
    def _error(self, e, what):
        if not isinstance(e, MPI.Exception):
            return e
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

        # ------------------------------------------------------------ operations (group ranks)
    def allgather_host(self, arr, timeout, what="collective"):
        out = np.empty((self.size,) + arr.shape, arr.dtype)
        what = f"{what} (its check of the shapes on every rank)"
        self._submit(what, lambda: self.comm.Allgather(arr, out)).wait(timeout)
        return out

    def allreduce(self, t, op):
        dt, mop, avg = _reduce_args(t.dtype, op)
        buf = [_buf(t), t.numel(), dt]
        return self._submit("all_reduce", lambda: self.comm.Allreduce(MPI.IN_PLACE, buf, mop),
                            (lambda: self._average(t)) if avg else None)

    def broadcast(self, t, root):
        buf = [_buf(t), MPI.BYTE]
        return self._submit("broadcast", lambda: self.comm.Bcast(buf, root))

    def reduce(self, t, root, op):
        dt, mop, avg = _reduce_args(t.dtype, op)
        buf = [_buf(t), t.numel(), dt]
        args = (MPI.IN_PLACE, buf) if self.rank == root else (buf, None)
        return self._submit("reduce", lambda: self.comm.Reduce(*args, mop, root),
                            (lambda: self._average(t)) if avg and self.rank == root else None)

    def allgather(self, out, t):
        inplace = out.data_ptr() + self.rank * t.nbytes == t.data_ptr()
        send, recv = MPI.IN_PLACE if inplace else [_buf(t), MPI.BYTE], [_buf(out), MPI.BYTE]
        return self._submit("all_gather", lambda: self.comm.Allgather(send, recv))

    def gather(self, flat, t, root):
        send, recv = [_buf(t), MPI.BYTE], [_buf(flat), MPI.BYTE] if flat is not None else None
        return self._submit("gather", lambda: self.comm.Gather(send, recv, root))

    def scatter(self, t, flat, root):
        send, recv = [_buf(flat), MPI.BYTE] if flat is not None else None, [_buf(t), MPI.BYTE]
        return self._submit("scatter", lambda: self.comm.Scatter(send, recv, root))

    def reduce_scatter(self, out, t, op):
        dt, mop, avg = _reduce_args(t.dtype, op)
        send, recv = [_buf(t), dt], [_buf(out), dt]
        return self._submit("reduce_scatter", lambda: self.comm.Reduce_scatter_block(send, recv, mop),
                            (lambda: self._average(out)) if avg else None)

    def barrier(self):
        return self._submit("barrier", self.comm.Barrier)

    def send(self, t, peer, tag):
        buf = [_buf(t), MPI.BYTE]
        return self._submit("send", lambda: self.comm.Send(buf, peer, tag))

    def recv(self, t, peer, tag):
        status, buf = MPI.Status(), [_buf(t), MPI.BYTE]
        src = MPI.ANY_SOURCE if peer is None else peer
        work = None
        def check():
            n = status.Get_count(MPI.BYTE)
            if n != t.nbytes:
                raise RuntimeError(f"recv: the message from rank {self.global_ranks[status.Get_source()]} has "
                                   f"{n} bytes, the receiving tensor {t.nbytes} (shapes or dtypes differ)")
            work._source = status.Get_source()
        work = self._submit("recv", lambda: self.comm.Recv(buf, src, tag, status), check)
        return work


