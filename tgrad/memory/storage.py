"""Storage: one block of device memory, returned to its allocator when collected."""
import sys

import numpy as np

from ..device import device
from . import allocator as _allocator
from .allocator import get_allocator
from .cuda_driver import PinnedHost, current_stream_handle
from .meta import NO_DATA, READS

_CPU = device("cpu")


class _HostView:
    """The base of a ``host_array``: exposes the bytes and keeps the Storage alive."""

    __slots__ = ("__array_interface__", "storage")

    def __init__(self, storage, ptr, nbytes):
        self.storage = storage
        self.__array_interface__ = {"data": (ptr, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


class Storage:
    """``nbytes`` of memory on ``device`` from that device's caching allocator.

    The block goes back to the allocator exactly once, when the Storage is
    garbage-collected (``__del__``: a ``weakref.finalize`` per tensor cost ~2 us).
    """

    __slots__ = ("ptr", "nbytes", "device", "launch_device", "allocator", "_block", "_owner", "pinned", "__weakref__")

    def __init__(self, nbytes, device):
        recent = _allocator._recent     # get_allocator's own fast path, without its call
        self.allocator = allocator = recent[1] if recent[0] is device else get_allocator(device)
        c = _allocator._c_malloc     # allocator.c's malloc without the method's frame (None: left to the method)
        block = c(allocator, nbytes) if c is not None else None
        self._block = block = block if block is not None else allocator.malloc(nbytes)
        self.ptr, self.nbytes, self.device, self._owner = block.ptr, nbytes, allocator.device, None
        self.launch_device = allocator.launch_device     # "cpu" or "cuda:N": what kernel launchers are given
        self.pinned = False

    def __del__(self):
        try:
            block = self._block
        except AttributeError:      # malloc raised in __init__
            return
        if block is not None:
            self._block = None
            try:
                c = _allocator._c_free
                if c is None or not c(self.allocator, block):
                    self.allocator.free(block)
            except Exception:
                if not sys.is_finalizing():    # at interpreter exit the process gives the memory back
                    raise

    @classmethod
    def wrap_host(cls, arr):
        """A cpu Storage over numpy array ``arr``'s memory (shared; keeps ``arr`` alive; not from the allocator)."""
        st = object.__new__(cls)
        base = arr
        while isinstance(base.base, np.ndarray):
            base = base.base
        lo = arr.__array_interface__["data"][0]
        span = [0, 0]
        for d, s in zip(arr.shape, arr.strides):
            if d > 1:
                span[s > 0] += (d - 1) * s
        st.ptr = lo + span[0]
        st.nbytes = (span[1] - span[0] + arr.itemsize) if arr.size else 0
        st.device = _CPU
        st.launch_device = "cpu"
        st.pinned = False
        st.allocator = get_allocator("cpu")
        st._block = None
        st._owner = arr
        return st

    @classmethod
    def pinned_host(cls, nbytes):
        """A cpu Storage in page-locked host memory (``cuMemHostAlloc``): asynchronous copies to and from
        GPUs (``non_blocking=True``) read and write it directly.  Freed (``cuMemFreeHost``) when collected."""
        st = object.__new__(cls)
        st._owner = PinnedHost(nbytes)
        st.ptr, st.nbytes, st.pinned = st._owner.ptr, nbytes, True
        st.device, st.launch_device = device("cpu"), "cpu"
        st.allocator = get_allocator("cpu")
        st._block = None
        return st

    def __repr__(self):
        return f"Storage(nbytes={self.nbytes}, device='{self.device}', ptr={self.ptr:#x})"

    def _check_range(self, offset, nbytes):
        if offset < 0 or nbytes < 0 or offset + nbytes > self.nbytes:
            raise IndexError(
                f"byte range [{offset}, {offset + nbytes}) is outside a storage of {self.nbytes} bytes")

    def host_array(self, dtype, count, offset_bytes=0):
        """A 1-D numpy array of ``count`` ``dtype`` items viewing this (cpu) storage."""
        if self.device.type == "meta" and READS.zeros:   # an op's host code on meta: scratch
            return np.zeros(count, dtype)
        if self.device.type != "cpu":
            raise RuntimeError(f"host_array() needs a cpu storage, this one is on {self.device}")
        dtype = np.dtype(dtype)
        nbytes = count * dtype.itemsize
        self._check_range(offset_bytes, nbytes)
        return np.asarray(_HostView(self, self.ptr + offset_bytes, nbytes)).view(dtype)

    def copy_from_host(self, src_ptr, nbytes, dst_offset=0):
        """Copy ``nbytes`` from host address ``src_ptr`` (or a ``bytes`` object) into this storage (synchronous)."""
        self._check_range(dst_offset, nbytes)
        self.allocator.backend.memcpy_htod(self.ptr + dst_offset, src_ptr, nbytes)

    def write_queued(self, data):
        """Copy the bytes ``data`` to the start of this storage without waiting for the device: on a GPU the
        copy is queued on the current stream and the driver stages ``data`` before returning.  (A synchronous
        ``cuMemcpyHtoD`` from pageable memory first waits for all queued work: a wait at every ``x * 2.0``,
        where PyTorch passes the number as a kernel argument.)"""
        be = self.allocator.backend
        if self.device.type == "cpu":
            be.memcpy_htod(self.ptr, data, len(data))
        else:
            be.memcpy_htod_async(self.ptr, data, len(data), current_stream_handle(be.index))

    def copy_to_host(self, dst_ptr, nbytes, src_offset=0):
        """Copy ``nbytes`` of this storage to host address ``dst_ptr`` (synchronous)."""
        self._check_range(src_offset, nbytes)
        self.allocator.backend.memcpy_dtoh(dst_ptr, self.ptr + src_offset, nbytes)

    def copy_(self, dst_offset, src_storage, src_offset, nbytes, non_blocking=False):
        """Copy ``nbytes`` from ``src_storage`` (any device) into this storage.

        ``non_blocking``: a copy between a GPU and pinned host memory is queued on the GPU's current
        stream and this returns at once (synchronize before reading the host side); otherwise the
        copy is done when this returns."""
        self._check_range(dst_offset, nbytes)
        src_storage._check_range(src_offset, nbytes)
        if src_storage.device.type == "meta" or self.device.type == "meta":     # no memory to read or write
            if self.device.type == "cuda":
                raise NotImplementedError(NO_DATA)
            if self.device.type == "cpu":       # raises PyTorch's NotImplementedError (or writes zeros, see meta)
                src_storage.allocator.backend.memcpy_dtoh(self.ptr + dst_offset, 0, nbytes)
            return
        dst, src = self.ptr + dst_offset, src_storage.ptr + src_offset
        if src_storage.device == self.device:
            self.allocator.backend.memcpy_dtod(dst, src, nbytes)
        elif src_storage.device.type == "cpu":
            be = self.allocator.backend
            if non_blocking and src_storage.pinned:
                be.memcpy_htod_async(dst, src, nbytes, current_stream_handle(be.index))
            else:
                be.memcpy_htod(dst, src, nbytes)
        elif self.device.type == "cpu":
            be = src_storage.allocator.backend
            if non_blocking and self.pinned:
                be.memcpy_dtoh_async(dst, src, nbytes, current_stream_handle(be.index))
            else:
                be.memcpy_dtoh(dst, src, nbytes)
        else:  # between two GPUs
            self.allocator.backend.memcpy_peer(dst, src_storage.allocator.backend.index, src, nbytes)

    def fill_zero(self):
        self.allocator.backend.memset(self.ptr, 0, self.nbytes)
