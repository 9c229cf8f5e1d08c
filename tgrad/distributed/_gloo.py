"""Gloo backend: collectives on cpu tensors over TCP sockets, for ranks not started by MPI (``mp.spawn``,
torchrun's ``env://`` idiom: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``).

Rendezvous: rank 0 listens at MASTER_ADDR:MASTER_PORT; every other rank listens on a port of its own,
connects to rank 0 and tells it that port; rank 0 sends everyone the table of addresses; then each rank
connects to the ranks below it, so every pair of ranks has one socket (a full mesh; the listeners are closed).
Operations run on the worker thread of ``ThreadBackend`` (in issue order, as the MPI backend), on numpy
views of the tensors' own memory. Collectives go through a root (rank 0 of the group, or the operation's
root): reductions are computed there in rank order (rank 0's + rank 1's + ...), so the result does not
depend on arrival order and equals the MPI backend's on 2 ranks bit for bit. Every message carries a
header (tag, bytes); a peer whose socket closes is named in the error ("rank k ... exited or was killed").
"""
import ctypes
import json
import select
import socket
import struct
import time

import numpy as np

from .. import dtypes as D
from ._types import DistBackendError, DistNetworkError, DistStoreError, ThreadBackend, reduction

_HEADER = struct.Struct("<qq")          # tag (-1: a collective's message), bytes
_NP_FN = {0: np.add, 2: np.multiply, 3: np.minimum, 4: np.maximum}


def _view(t):
    """The bytes of cpu tensor ``t``'s memory as a writable uint8 array (no copy)."""
    if not t.nbytes:
        return np.empty(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * t.nbytes).from_address(t.data_ptr()))


def _typed(t):
    """``t``'s memory as a numpy array of its dtype (bool as uint8: or/and are max/min on bytes)."""
    v = _view(t)
    return v if t.dtype is D.bool_ else v.view(t.dtype.np)


def _bytes(a):
    """A memoryview of the bytes of contiguous array ``a`` (any dtype, bfloat16 too)."""
    return memoryview(a.reshape(-1).view(np.uint8))


# ---------------------------------------------------------------- rendezvous
def _tuned(s, timeout):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    return s


def _read_exact(s, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = s.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("connection closed during the rendezvous")
        got += k
    return bytes(buf)


def _connect(host, port, deadline, timeout):
    """A socket connected to (host, port), retrying until ``deadline`` (the other side may not listen yet)."""
    while True:
        try:
            return socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
        except OSError:
            if time.monotonic() >= deadline:
                raise DistNetworkError(f"The client socket has timed out after {int(timeout * 1000)}ms while "
                                       f"trying to connect to ({host}, {port}).") from None
            time.sleep(0.05)


def connect(host, port, rank, size, timeout):
    """The full mesh of the ``size`` ranks: {other global rank: connected socket}."""
    deadline = time.monotonic() + timeout
    socks = {}
    if rank == 0:
        try:
            srv = socket.create_server(("", port), backlog=max(size, 8))
        except OSError as e:
            raise DistNetworkError(f"The server socket has failed to listen on any local network address. "
                                   f"port: {port}, useIpv6: 0, code: -{e.errno}, name: {e.strerror}") from None
        table = [None] * size
        with srv:
            while sum(s is not None for s in table[1:]) < size - 1:
                srv.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    conn, addr = srv.accept()
                except socket.timeout:
                    joined = 1 + sum(s is not None for s in table[1:])
                    raise DistStoreError(f"Timed out after {timeout:g} seconds waiting for clients. "
                                         f"{joined}/{size} clients joined.") from None
                r, n, p = struct.unpack("<qqq", _read_exact(_tuned(conn, timeout), 24))
                if n != size or not 0 < r < size or r in socks:
                    conn.close()
                    raise ValueError(f"init_process_group: a process joined as rank {r} of world_size {n}, but "
                                     f"rank 0 has world_size {size} (and ranks 1..{size - 1} once each)")
                socks[r], table[r] = conn, (addr[0], p)
        msg = json.dumps(table).encode()
        for r in range(1, size):
            socks[r].sendall(struct.pack("<q", len(msg)) + msg)
        return socks
    lsn = socket.create_server(("", 0), backlog=max(size, 8))
    with lsn:
        s = _connect(host, port, deadline, timeout)
        socks[0] = _tuned(s, timeout)
        s.sendall(struct.pack("<qqq", rank, size, lsn.getsockname()[1]))
        table = json.loads(_read_exact(s, struct.unpack("<q", _read_exact(s, 8))[0]))
        for r in range(1, rank):
            c = _connect(table[r][0], table[r][1], deadline, timeout)
            c.sendall(struct.pack("<q", rank))
            socks[r] = _tuned(c, timeout)
        for _ in range(size - 1 - rank):
            lsn.settimeout(max(0.01, deadline - time.monotonic()))
            conn = _tuned(lsn.accept()[0], timeout)
            socks[struct.unpack("<q", _read_exact(conn, 8))[0]] = conn
    return socks


class _PeerLost(Exception):
    def __init__(self, peer):
        self.peer = peer


# ---------------------------------------------------------------- the backend
class GlooBackend(ThreadBackend):
    name = "gloo"
    stuck_hint = "a rank is stuck (or waits in another collective)"

    def __init__(self, socks, global_ranks, me, timeout):
        self.socks, self.global_ranks, self.timeout = socks, list(global_ranks), timeout
        self.rank, self.size = self.global_ranks.index(me), len(self.global_ranks)
        self._me, self._owner = me, False

    @classmethod
    def world(cls, host, port, rank, size, timeout):
        b = cls(connect(host, port, rank, size, timeout), range(size), rank, timeout)
        b._owner = True
        return b

    def split(self, ranks, timeout):
        """The backend of a sub-group (None on ranks outside it): the same sockets, the group's ranks."""
        return GlooBackend(self.socks, ranks, self._me, timeout) if self._me in ranks else None

    def free(self):
        """Close the sockets once the queued operations are done (after at most 10 s: a stuck one then fails)."""
        if self._owner:
            try:
                self._submit("destroy_process_group", lambda: None).wait(min(self.timeout, 10))
            except Exception:
                pass
            for s in self.socks.values():
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def check_device(self, t):
        if t.device.type != "cpu":
            raise RuntimeError(f"the gloo backend handles cpu tensors, got a tensor on {t.device} (move it to the "
                               f"cpu, or use the nccl backend)")

    def _error(self, e, what):
        me = self.global_ranks[self.rank]
        if isinstance(e, _PeerLost):
            return DistBackendError(f"[rank {me}] {what} failed: rank {e.peer} of the process group exited or was "
                                    f"killed (its connection closed)")
        if isinstance(e, socket.timeout):
            return DistBackendError(f"[rank {me}] {what} timed out after {self.timeout:g} s waiting for the other "
                                    f"ranks of the process group (ranks {self.global_ranks}); {self.stuck_hint}")
        if isinstance(e, OSError):
            return DistBackendError(f"[rank {me}] {what} failed: {e}")
        return e

    # ------------------------------------------------------------ messages (group ranks)
    def _put(self, r, data, tag=-1):
        g = self.global_ranks[r]
        try:
            self.socks[g].sendall(_HEADER.pack(tag, data.nbytes))
            if data.nbytes:
                self.socks[g].sendall(_bytes(data))
        except (BrokenPipeError, ConnectionResetError):
            raise _PeerLost(g) from None

    def _read(self, g, out):
        view, got = _bytes(out), 0
        while got < len(view):
            try:
                k = self.socks[g].recv_into(view[got:])
            except ConnectionResetError:
                k = 0
            if k == 0:
                raise _PeerLost(g)
            got += k

    def _header(self, g):
        h = np.empty(_HEADER.size, np.uint8)
        self._read(g, h)
        return _HEADER.unpack(h.tobytes())

    def _get(self, r, out):
        """Receive a collective's message from group rank ``r`` into ``out`` (a contiguous numpy array)."""
        g = self.global_ranks[r]
        tag, n = self._header(g)
        if tag != -1 or n != out.nbytes:
            raise DistBackendError(f"[rank {self._me}] expected a collective's message of {out.nbytes} bytes from "
                                   f"rank {g}, got {n} bytes with tag {tag} (the ranks run different operations)")
        if n:
            self._read(g, out)

    def _others(self):
        return [r for r in range(self.size) if r != self.rank]

    def _bcast(self, root, buf):
        if self.rank == root:
            for r in self._others():
                self._put(r, buf)
        else:
            self._get(root, buf)

    def _gather(self, root, mine, rows):
        """``rows[r]`` on ``root`` = ``mine`` of group rank r."""
        if self.rank == root:
            for r in range(self.size):
                if r == root:
                    if rows[r].ctypes.data != mine.ctypes.data:
                        rows[r][...] = mine
                else:
                    self._get(r, rows[r])
        else:
            self._put(root, mine)

    def _reduce(self, root, a, code):
        """``a`` on ``root`` = the reduction of every rank's ``a``, in rank order (a on the others: unchanged)."""
        if self.rank != root:
            self._put(root, a)
            return
        parts = np.empty((self.size,) + a.shape, a.dtype)
        self._gather(root, a, parts)
        acc = parts[0]
        for p in parts[1:]:
            _NP_FN[code](acc, p, out=acc)
        a[...] = acc

    # ------------------------------------------------------------ operations (group ranks)
    def allgather_host(self, arr, timeout, what="collective"):
        out = np.empty((self.size,) + arr.shape, arr.dtype)
        def run():
            self._gather(0, np.ascontiguousarray(arr), out)
            self._bcast(0, out)
        self._submit(f"{what} (its check of the shapes on every rank)", run).wait(timeout)
        return out

    def allreduce(self, t, op):
        code, avg = reduction(t.dtype, op)
        a = _typed(t)
        def run():
            self._reduce(0, a, code)
            self._bcast(0, a)
        return self._submit("all_reduce", run, (lambda: self._average(t)) if avg else None)

    def broadcast(self, t, root):
        a = _view(t)
        return self._submit("broadcast", lambda: self._bcast(root, a))

    def reduce(self, t, root, op):
        code, avg = reduction(t.dtype, op)
        a = _typed(t)
        return self._submit("reduce", lambda: self._reduce(root, a, code),
                            (lambda: self._average(t)) if avg and self.rank == root else None)

    def allgather(self, out, t):
        a, rows = _view(t), _view(out).reshape(self.size, -1)
        def run():
            self._gather(0, a, rows)
            self._bcast(0, rows)
        return self._submit("all_gather", run)

    def gather(self, flat, t, root):
        a = _view(t)
        rows = _view(flat).reshape(self.size, -1) if flat is not None else None
        return self._submit("gather", lambda: self._gather(root, a, rows))

    def scatter(self, t, flat, root):
        a = _view(t)
        rows = _view(flat).reshape(self.size, -1) if flat is not None else None
        def run():
            if self.rank == root:
                for r in self._others():
                    self._put(r, rows[r])
                a[...] = rows[root]
            else:
                self._get(root, a)
        return self._submit("scatter", run)

    def reduce_scatter(self, out, t, op):
        code, avg = reduction(t.dtype, op)
        src, dst = _typed(t), _typed(out)
        def run():
            acc = src.copy()                     # the input stays unchanged (as MPI's Reduce_scatter_block)
            self._reduce(0, acc, code)
            if self.rank == 0:
                rows = acc.reshape(self.size, -1)
                for r in self._others():
                    self._put(r, rows[r])
                dst[...] = rows[0]
            else:
                self._get(0, dst)
        return self._submit("reduce_scatter", run, (lambda: self._average(out)) if avg else None)

    def barrier(self):
        none = np.empty(0, np.uint8)
        def run():
            self._gather(0, none, [none] * self.size)
            self._bcast(0, none)
        return self._submit("barrier", run)

    def send(self, t, peer, tag):
        a = _view(t)
        return self._submit("send", lambda: self._put(peer, a, tag))

    def recv(self, t, peer, tag):
        a, work = _view(t), None
        def run():
            if peer is None:        # any source: the first rank whose message arrives
                socks = {self.socks[self.global_ranks[r]]: r for r in self._others()}
                ready, _, _ = select.select(list(socks), [], [], self.timeout)
                if not ready:
                    raise socket.timeout()
                src = min(socks[s] for s in ready)
            else:
                src = peer
            g = self.global_ranks[src]
            got_tag, n = self._header(g)
            if got_tag != tag or n != a.nbytes:
                self._read(g, np.empty(n, np.uint8))        # drop it: the stream stays in step
                if got_tag != tag:
                    raise RuntimeError(f"recv: the message from rank {g} has tag {got_tag}, expected {tag} (tgrad's "
                                       f"gloo backend receives a peer's messages in the order they were sent)")
                raise RuntimeError(f"recv: the message from rank {g} has {n} bytes, the receiving tensor "
                                   f"{a.nbytes} (shapes or dtypes differ)")
            if n:
                self._read(g, a)
            work._source = src
        work = self._submit("recv", run)
        return work
