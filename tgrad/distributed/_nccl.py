"""NCCL backend: collectives on cuda tensors through the NCCL library (``nvidia-nccl-cu12`` wheel), by ctypes.

Rank 0 makes the communicator's unique id (``ncclGetUniqueId``), MPI broadcasts it, every rank calls
``ncclCommInitRank`` on its current device. Operations are queued on tgrad's stream (the default
stream, where tgrad's kernels run), so they are ordered after the kernels that made their inputs;
``Work.wait`` synchronizes the device.

UNTESTED ON A GPU: this project has no GPU. The tests check what a cpu machine can: the library
loads, its version, and the unique-id exchange over MPI. Everything from ``ncclCommInitRank`` on
has never run.
"""
import ctypes
import glob
import os

from .. import dtypes as D
from ._types import DistBackendError, ReduceOp, Work

_INSTALL = 'pip install "tgrad[nccl]"'
_LIB = None
# ncclDataType_t and ncclRedOp_t (nccl.h)
_TYPES = {D.int8: 0, D.uint8: 1, D.bool_: 1, D.int32: 2, D.int64: 4, D.float16: 6, D.float32: 7, D.float64: 8,
          D.bfloat16: 9}
_OPS = {0: 0, 2: 1, 4: 2, 3: 3, 1: 4}      # ReduceOp value -> ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def find_library():
    """Path of libnccl.so.2: from the nvidia-nccl wheel, else $TGRAD_NCCL_LIBRARY, else None."""
    path = os.environ.get("TGRAD_NCCL_LIBRARY")
    if path:
        return path
    try:
        import nvidia.nccl
    except ImportError:
        return None
    for d in nvidia.nccl.__path__:
        hits = glob.glob(os.path.join(d, "lib", "libnccl.so*"))
        if hits:
            return sorted(hits)[0]
    return None


def library():
    global _LIB
    if _LIB is None:
        path = find_library()
        if path is None:
            raise RuntimeError(f"the NCCL backend needs the NCCL library: {_INSTALL} (or set TGRAD_NCCL_LIBRARY)")
        lib = ctypes.CDLL(path)
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        _LIB = lib
    return _LIB


def _check(code, what):
    if code != 0:
        raise DistBackendError(f"NCCL error in {what}: {library().ncclGetErrorString(code).decode()} ({code})")


def version():
    """NCCL's version code, e.g. 23203 for 2.32.3."""
    v = ctypes.c_int()
    _check(library().ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    return v.value


def get_unique_id():
    uid = UniqueId()
    _check(library().ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    return uid


def exchange_unique_id(mpi):
    """Rank 0's fresh unique id, on every rank of the MPI backend ``mpi`` (MPI broadcast of its 128 bytes)."""
    from . import _mpi
    uid = get_unique_id() if mpi.rank == 0 else UniqueId()
    buf = _mpi.MPI.buffer.fromaddress(ctypes.addressof(uid), ctypes.sizeof(uid))
    mpi._submit("NCCL unique id exchange", lambda: mpi.comm.Bcast([buf, _mpi.MPI.BYTE], 0)).wait()
    return uid


class NCCLBackend:
    """A NCCL communicator over the ranks of the MPI backend ``mpi`` (which keeps serving host-side checks)."""
    name = "nccl"

    def __init__(self, mpi):
        from .. import cuda
        if not cuda.is_available():
            raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
        self.mpi, self.rank, self.size = mpi, mpi.rank, mpi.size
        uid = exchange_unique_id(mpi)
        self.comm = ctypes.c_void_p()
        _check(library().ncclCommInitRank(ctypes.byref(self.comm), self.size, uid, self.rank), "ncclCommInitRank")

    def split(self, ranks, timeout):
        mpi = self.mpi.split(ranks, timeout)
        return None if mpi is None else NCCLBackend(mpi)

    def free(self):
        if self.comm:
            library().ncclCommDestroy(self.comm)
            self.comm = ctypes.c_void_p()
        self.mpi.free()

    def check_device(self, t):
        if t.device.type != "cuda":
            raise ValueError("Tensors must be CUDA and dense")
        if t.dtype not in _TYPES:
            raise TypeError(f"Unsupported {D.TENSOR_TYPE_NAMES[t.dtype][:-6]} data type for NCCL process group")

    def allgather_host(self, arr, timeout, what="collective"):
        return self.mpi.allgather_host(arr, timeout, what)

    def _work(self):
        from .. import cuda
        return Work(lambda timeout: cuda.synchronize())

    def _op(self, dtype, op):
        if dtype is D.bool_:
            if op is ReduceOp.AVG:
                raise ValueError("Cannot use ReduceOp.AVG with boolean inputs")
            return _OPS[{0: 4, 2: 3}.get(op.value, op.value)]
        return _OPS[op.value]

    def _call(self, name, *args):
        _check(getattr(library(), name)(*args, self.comm, None), name)
        return self._work()

    def allreduce(self, t, op):
        p = ctypes.c_void_p(t.data_ptr())
        return self._call("ncclAllReduce", p, p, ctypes.c_size_t(t.numel()), _TYPES[t.dtype], self._op(t.dtype, op))

    def broadcast(self, t, root):
        p = ctypes.c_void_p(t.data_ptr())
        return self._call("ncclBroadcast", p, p, ctypes.c_size_t(t.numel()), _TYPES[t.dtype], root)

    def reduce(self, t, root, op):
        p = ctypes.c_void_p(t.data_ptr())
        return self._call("ncclReduce", p, p, ctypes.c_size_t(t.numel()), _TYPES[t.dtype], self._op(t.dtype, op),
                          root)

    def allgather(self, out, t):
        return self._call("ncclAllGather", ctypes.c_void_p(t.data_ptr()), ctypes.c_void_p(out.data_ptr()),
                          ctypes.c_size_t(t.numel()), _TYPES[t.dtype])

    def reduce_scatter(self, out, t, op):
        return self._call("ncclReduceScatter", ctypes.c_void_p(t.data_ptr()), ctypes.c_void_p(out.data_ptr()),
                          ctypes.c_size_t(out.numel()), _TYPES[t.dtype], self._op(t.dtype, op))

    def _p2p(self, pairs):
        """ncclSend/ncclRecv calls (name, tensor, peer) as one group."""
        lib = library()
        _check(lib.ncclGroupStart(), "ncclGroupStart")
        for name, t, peer in pairs:
            _check(getattr(lib, name)(ctypes.c_void_p(t.data_ptr()), ctypes.c_size_t(t.numel()), _TYPES[t.dtype],
                                      peer, self.comm, None), name)
        _check(lib.ncclGroupEnd(), "ncclGroupEnd")
        return self._work()

    def gather(self, flat, t, root):
        pairs = [("ncclSend", t, root)]
        if self.rank == root:
            pairs += [("ncclRecv", flat[r], r) for r in range(self.size)]
        return self._p2p(pairs)

    def scatter(self, t, flat, root):
        pairs = [("ncclRecv", t, root)]
        if self.rank == root:
            pairs += [("ncclSend", flat[r], r) for r in range(self.size)]
        return self._p2p(pairs)

    def barrier(self):
        from .._creation import zeros
        return self.allreduce(zeros(1, device="cuda"), ReduceOp.SUM)

    def send(self, t, peer, tag):
        return self._p2p([("ncclSend", t, peer)])

    def recv(self, t, peer, tag):
        if peer is None:
            raise RuntimeError("recv from any source is not supported by the NCCL backend")
        work = self._p2p([("ncclRecv", t, peer)])
        work._source = peer
        return work
