"""Process groups and collectives with PyTorch's names (``torch.distributed``), on MPI, gloo (TCP) or NCCL.

A process group is a backend object (``_mpi.MPIBackend``, ``_gloo.GlooBackend``, ``_nccl.NCCLBackend``) plus the global
ranks it spans. Every collective first checks, on the public API, that all ranks of the group run
the same collective on the same shapes and dtypes (an all-gather of a small fingerprint, PyTorch's
``CollectiveFingerPrint`` check), so a mismatch raises on every rank instead of corrupting memory.
Then the backend starts the operation on the tensors' own buffers and returns a ``Work``.
"""
import datetime
import os
import signal
import sys
import traceback

from .. import dtypes as D
from .._creation import empty
from ._types import (Backend, DistBackendError, DistError, DistNetworkError, DistStoreError,  # noqa: F401
                     ReduceOp, Work)  # (re-exported)

default_pg_timeout = datetime.timedelta(minutes=30)


class ProcessGroup:
    """A set of ranks (``ranks``: their global ranks in order) and the backend that talks to them."""

    def __init__(self, backend, ranks, timeout):
        self._backend, self._ranks, self._timeout, self._seq = backend, list(ranks), timeout, 0

    def rank(self):
        return self._backend.rank

    def size(self):
        return self._backend.size

    def name(self):
        return self._backend.name

    def _group_rank(self, global_rank, what="rank"):
        try:
            return self._ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"{what} {global_rank} is not part of group {self._ranks}") from None


class _World:
    pg = None            # the default group (WORLD)
    groups = []


def _group(group):
    if _World.pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _World.pg if group is None else group


GroupMember = _World


def is_available():
    return True


def is_mpi_available():
    try:
        from . import _mpi
        _mpi.load()
        return True
    except Exception:
        return False


def is_gloo_available():
    return True


def is_nccl_available():
    from . import _nccl
    return _nccl.find_library() is not None


def is_initialized():
    return _World.pg is not None


def is_torchelastic_launched():
    return os.environ.get("TGRAD_LAUNCHER") == "1"


def _fail(exc_type, exc, tb):
    """An uncaught exception on a rank: print it, then leave at once. With several ranks the process kills
    itself (SIGKILL) instead of exiting: MPI_Finalize would wait for the others, and with MPI's fault
    tolerance a killed rank is what the others detect and name in their error."""
    rank = get_rank() if _World.pg is not None else int(os.environ.get("RANK", 0))
    try:
        sys.stderr.write(f"[rank {rank}] " + "".join(traceback.format_exception(exc_type, exc, tb)))
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        if int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", 1))) > 1:
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(1)


_MPI_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS")


def _started_by_mpi():
    """Was this process started by mpiexec (or ``python -m tgrad.distributed.run``)?"""
    return any(v in os.environ for v in _MPI_VARS)


def _rendezvous(init_method, rank, world_size):
    """(host, port, rank, world_size) from ``init_method`` ("env://" or "tcp://host:port"), the arguments and
    torchrun's variables (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), as PyTorch's handlers."""
    from urllib.parse import parse_qs, urlparse
    url = urlparse(init_method or "env://")
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    rank = int(query.get("rank", rank))
    world_size = int(query.get("world_size", world_size))
    def error(msg):
        return ValueError(f"Error initializing torch.distributed using {url.scheme}:// rendezvous: {msg}")
    if url.scheme == "env":
        def env(var):
            if not os.environ.get(var):
                raise error(f"environment variable {var} expected, but not set")
            return os.environ[var]
        rank = rank if rank != -1 else int(env("RANK"))
        world_size = world_size if world_size != -1 else int(env("WORLD_SIZE"))
        host, port = env("MASTER_ADDR"), int(env("MASTER_PORT"))
    elif url.scheme == "tcp":
        if rank == -1:
            raise error("rank parameter missing")
        if world_size == -1:
            raise error("world size parameter missing")
        if not url.hostname or url.port is None:
            raise error("hostname and port expected in the url (tcp://host:port)")
        host, port = url.hostname, url.port
    else:
        raise ValueError(f"No rendezvous handler for {url.scheme}:// (tgrad has env:// and tcp://)")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank} for world_size {world_size}: rank should be in [0, {world_size - 1}]")
    return host, port, rank, world_size


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group. Two ways to start the ranks:

    - ``mpiexec`` or ``python -m tgrad.distributed.run``: MPI connects the ranks; ``rank``/``world_size`` (or the
      ``RANK``/``WORLD_SIZE`` variables) are checked against MPI's; "gloo" is served by MPI too.
    - any other launcher (``tgrad.multiprocessing.spawn``, a shell setting torchrun's variables): backend "gloo"
      (the default there) rendezvous over TCP at ``init_method`` ("env://": ``MASTER_ADDR``:``MASTER_PORT``,
      or "tcp://host:port"), with ``rank``/``world_size`` from the arguments or ``RANK``/``WORLD_SIZE``.

    backend: "mpi" (cpu tensors), "gloo" (cpu tensors) or "nccl" (cuda tensors; communicator id exchanged over MPI).
    timeout: a ``datetime.timedelta``: how long the rendezvous and each collective may wait for the other ranks.
    """
    if _World.pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    by_mpi = _started_by_mpi()
    backend = Backend(backend or ("mpi" if by_mpi else "gloo"))
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    if backend == Backend.GLOO and not by_mpi:
        from . import _gloo
        host, port, rank, world_size = _rendezvous(init_method, rank, world_size)
        impl = _gloo.GlooBackend.world(host, port, rank, world_size, timeout.total_seconds())
        _World.pg = ProcessGroup(impl, range(world_size), timeout.total_seconds())
        _World.groups = [_World.pg]
        sys.excepthook = _fail
        return
    from . import _mpi
    mpi = _mpi.MPIBackend.world(timeout.total_seconds())
    for name, want, have in (("rank", rank, mpi.rank), ("world_size", world_size, mpi.size),
                             ("RANK", os.environ.get("RANK"), mpi.rank),
                             ("WORLD_SIZE", os.environ.get("WORLD_SIZE"), mpi.size)):
        if want is not None and int(want) != -1 and int(want) != have:
            raise ValueError(f"init_process_group: {name}={want} but MPI started this process as rank {mpi.rank} "
                             f"of {mpi.size}; start the ranks with `python -m tgrad.distributed.run "
                             f"--nproc-per-node N script.py` (or mpiexec -n N)")
    if backend == Backend.NCCL:
        from . import _nccl
        impl = _nccl.NCCLBackend(mpi)
    else:
        impl = mpi
    _World.pg = ProcessGroup(impl, range(mpi.size), timeout.total_seconds())
    _World.groups = [_World.pg]
    sys.excepthook = _fail


def destroy_process_group(group=None):
    """Free ``group`` (default: all groups; the default group can be initialized again afterwards)."""
    if group is None or group is _World.pg:
        for g in _World.groups:
            g._backend.free()
        _World.pg, _World.groups = None, []
        if sys.excepthook is _fail:
            sys.excepthook = sys.__excepthook__
    else:
        group._backend.free()
        _World.groups.remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """A group of the given global ranks (all by default). Every rank of the world must call it (as PyTorch);
    the others get a group object they are not a member of, on which ``get_rank`` returns -1."""
    pg = _group(None)
    ranks = sorted(range(pg.size()) if ranks is None else ranks)
    for r in ranks:
        if not 0 <= r < pg.size():
            raise ValueError(f"Invalid rank {r}: the world has {pg.size()} ranks")
    t = pg._timeout if timeout is None else timeout.total_seconds()
    impl = pg._backend.split(ranks, t)
    group = ProcessGroup(impl, ranks, t) if impl is not None else _NonMember(ranks)
    _World.groups.append(group)
    return group


class _NonMember(ProcessGroup):
    def __init__(self, ranks):
        self._ranks = ranks

    def rank(self):
        return -1

    def size(self):
        return len(self._ranks)


def get_backend(group=None):
    return _group(group).name()


def get_rank(group=None):
    return _group(group).rank()


def get_world_size(group=None):
    return _group(group).size()


def get_global_rank(group, group_rank):
    return _group(group)._ranks[group_rank]


def get_process_group_ranks(group):
    return list(_group(group)._ranks)


# ---------------------------------------------------------------- checks shared by the collectives
_TYPE_NAMES = {D.float32: "Float", D.float64: "Double", D.float16: "Half", D.bfloat16: "BFloat16",
               D.int64: "Long", D.int32: "Int", D.int16: "Short", D.int8: "Char", D.uint8: "Byte", D.bool_: "Bool"}
_OP_CODES = ["ALLREDUCE", "BROADCAST", "REDUCE", "ALLGATHER", "GATHER", "SCATTER", "REDUCE_SCATTER", "BARRIER"]
_OP_NAMES = dict(zip(_OP_CODES, ["all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter",
                                  "reduce_scatter", "barrier"]))
_DTYPE_CODES = list(_TYPE_NAMES)
_MAX_DIMS = 8


def _check_tensor(t, pg, name="tensor"):
    from ..tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(t)} instead.")
    if not t.is_contiguous():
        raise ValueError("Tensors must be contiguous")
    pg._backend.check_device(t)


def _fingerprint(pg, op, t, extra=0):
    """All ranks of ``pg`` run collective ``op`` on tensors of ``t``'s shape and dtype (and the same
    ``extra``: root, reduce op); else raise, on every rank, PyTorch's mismatch error."""
    import numpy as np
    pg._seq += 1
    shape = tuple(t.shape) if t is not None else ()
    fp = np.zeros(5 + _MAX_DIMS, np.int64)
    fp[:5] = (pg._seq, _OP_CODES.index(op), _DTYPE_CODES.index(t.dtype) if t is not None else -1, len(shape),
              extra)
    fp[5:5 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
    fp[5 + _MAX_DIMS - 1] ^= hash(shape[_MAX_DIMS - 1:]) if len(shape) >= _MAX_DIMS else 0
    allfp = pg._backend.allgather_host(fp, pg._timeout, _OP_NAMES[op])
    bad = [r for r in range(pg.size()) if not np.array_equal(allfp[r], allfp[0])]
    if bad:
        def describe(f):
            s = [int(d) for d in f[5:5 + min(int(f[3]), _MAX_DIMS)]]
            dt = _TYPE_NAMES[_DTYPE_CODES[f[2]]] if f[2] >= 0 else ""
            return (f"CollectiveFingerPrint(SequenceNumber={f[0]}, OpType={_OP_CODES[f[1]]}, TensorShape={s}, "
                    f"TensorDtypes={dt}, Root/ReduceOp={f[4]})")
        raise RuntimeError(f"Detected mismatch between collectives on ranks. Rank {pg._ranks[0]} is running "
                           f"collective: {describe(allfp[0])}, but Rank {pg._ranks[bad[0]]} is running collective: "
                           f"{describe(allfp[bad[0]])}.")


def _op_code(op):
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError(f"op must be a ReduceOp (ReduceOp.SUM, ...), got {op!r}")
    return op.value


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _same(tensors, ref, what):
    for t in tensors:
        if t.dtype != ref.dtype or tuple(t.shape) != tuple(ref.shape):
            raise ValueError(f"{what}: every tensor must have the input's shape {tuple(ref.shape)} and dtype "
                             f"{ref.dtype}, got {tuple(t.shape)} and {t.dtype}")


# ---------------------------------------------------------------- collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """In place: ``tensor`` = op over the ranks of the group of their ``tensor``."""
    pg = _group(group)
    _check_tensor(tensor, pg)
    _fingerprint(pg, "ALLREDUCE", tensor, _op_code(op))
    return _run(pg._backend.allreduce(tensor, op), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """``tensor`` of global rank ``src`` copied into ``tensor`` on every rank of the group."""
    pg = _group(group)
    root = group_src if group_src is not None else pg._group_rank(src, "src")
    _check_tensor(tensor, pg)
    _fingerprint(pg, "BROADCAST", tensor, root)
    return _run(pg._backend.broadcast(tensor, root), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` of all ranks into ``tensor`` of rank ``dst`` (the others' ``tensor`` is unchanged)."""
    pg = _group(group)
    root = group_dst if group_dst is not None else pg._group_rank(dst, "dst")
    _check_tensor(tensor, pg)
    _fingerprint(pg, "REDUCE", tensor, root * 8 + _op_code(op))
    return _run(pg._backend.reduce(tensor, root, op), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` (world_size * n elements, as ``cat`` or ``stack`` of the inputs) gets every rank's input."""
    pg = _group(group)
    _check_tensor(input_tensor, pg, "input_tensor")
    _check_tensor(output_tensor, pg, "output_tensor")
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    _fingerprint(pg, "ALLGATHER", input_tensor)
    return _run(pg._backend.allgather(output_tensor, input_tensor), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` = ``tensor`` of the group's rank r (all of the same shape and dtype)."""
    pg = _group(group)
    _check_tensor(tensor, pg)
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list must hold world_size={pg.size()} tensors, got {len(tensor_list)}")
    _same(tensor_list, tensor, "all_gather")
    _fingerprint(pg, "ALLGATHER", tensor)
    flat = empty((pg.size(),) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
    work = pg._backend.allgather(flat, tensor)
    return _run(_then(work, lambda: [t.copy_(flat[i]) for i, t in enumerate(tensor_list)]), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` = chunk ``rank`` of the reduction (over ranks) of ``input`` (world_size * output.numel())."""
    pg = _group(group)
    _check_tensor(input, pg, "input")
    _check_tensor(output, pg, "output")
    if output.dtype != input.dtype:
        raise TypeError("input tensor must be the same type as the output tensor.")
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    _fingerprint(pg, "REDUCE_SCATTER", output, _op_code(op))
    return _run(pg._backend.reduce_scatter(output, input, op), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """``gather_list[r]`` on rank ``dst`` = ``tensor`` of rank r (``gather_list`` only given on ``dst``)."""
    pg = _group(group)
    root = group_dst if group_dst is not None else pg._group_rank(0 if dst is None else dst, "dst")
    _check_tensor(tensor, pg)
    if pg.rank() == root:
        if gather_list is None or len(gather_list) != pg.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank, with world_size "
                             "tensors.")
        _same(gather_list, tensor, "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    _fingerprint(pg, "GATHER", tensor, root)
    flat = empty((pg.size(),) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device) \
        if pg.rank() == root else None
    work = pg._backend.gather(flat, tensor, root)
    if flat is None:
        return _run(work, async_op)
    return _run(_then(work, lambda: [t.copy_(flat[i]) for i, t in enumerate(gather_list)]), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """``tensor`` on rank r = ``scatter_list[r]`` of rank ``src`` (``scatter_list`` only given on ``src``)."""
    from .._functional import stack
    pg = _group(group)
    root = group_src if group_src is not None else pg._group_rank(0 if src is None else src, "src")
    _check_tensor(tensor, pg)
    if pg.rank() == root:
        if scatter_list is None or len(scatter_list) != pg.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank, with world_size "
                             "tensors.")
        _same(scatter_list, tensor, "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _fingerprint(pg, "SCATTER", tensor, root)
    flat = stack(list(scatter_list)).contiguous() if pg.rank() == root else None
    return _run(pg._backend.scatter(tensor, flat, root), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Returns when every rank of the group has entered it (or raises after the group's timeout)."""
    pg = _group(group)
    _fingerprint(pg, "BARRIER", None)
    return _run(pg._backend.barrier(), async_op)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to global rank ``dst`` (blocks until it may be reused)."""
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from global rank ``src``; returns the sender's rank. The message must have
    exactly ``tensor.nbytes`` bytes."""
    pg = _group(group)
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return pg._ranks[work._source]


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    pg = _group(group)
    peer = group_dst if group_dst is not None else pg._group_rank(dst, "dst")
    _check_tensor(tensor, pg)
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank of "
                         "the current process.")
    return pg._backend.send(tensor, peer, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    pg = _group(group)
    peer = None if src is None and group_src is None else \
        (group_src if group_src is not None else pg._group_rank(src, "src"))
    _check_tensor(tensor, pg)
    if peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank of the current "
                         "process.")
    return pg._backend.recv(tensor, peer, tag)


def _then(work, fn):
    """``work`` followed by ``fn()`` once it is complete."""
    prev = work._then
    def both():
        if prev is not None:
            prev()
        fn()
    work._then = both
    if work._done:
        work._then = None
        both()
    return work
