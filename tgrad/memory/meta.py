"""The ``meta`` device's stand-ins for an allocator and a backend: tensors with a shape and no memory.

A meta Storage gets address 0 and nothing is allocated or counted (``memory_allocated()`` of every real
device is unchanged); writes into meta memory are dropped; reading it back raises PyTorch's error.
"""
import ctypes
import threading

from ..device import device as _device

NO_DATA = "Cannot copy out of meta tensor; no data!"
NO_ITEM = "Tensor.item() cannot be called on meta tensors"
NONZERO = ("The register_meta function for torch.nonzero() raises unimplemented by default, as a correct "
           "data-independent implementation does not exist. This implementation returns a fake value, "
           "assuming all elements of the tensor are non-zero. To enable this registration, please set "
           "'torch.fx.experimental._config.meta_nonzero_assume_all_nonzero' to True.")
REFUSALS = {NO_DATA, NO_ITEM, NONZERO}      # the messages of every refusal to read meta values (unsupported's too)


def unsupported(aten):
    """PyTorch's message for ATen op ``aten`` (None: nonzero) on meta tensors: it has no meta kernel (its
    result's shape depends on the values)."""
    msg = NONZERO if aten is None else (
        f"aten::{aten}: attempted to run this operator with Meta tensors, but there was no fake impl or Meta kernel "
        "registered. You may have run into this message while using an operator with PT2 compilation APIs "
        "(torch.compile/torch.export); in order to use this operator with those APIs you'll need to add a fake "
        "impl. Please see the following for next steps:  "
        "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")
    REFUSALS.add(msg)
    return msg


class _Reads(threading.local):
    zeros = False       # while true, reading meta memory gives zeros instead of raising


READS = _Reads()


class MetaBackend:
    """No memory: copies into meta memory and memsets do nothing; a copy out of it raises PyTorch's
    NotImplementedError, or (``READS.zeros``: an op's forward computing its result's metadata, see
    ``autograd.dispatch``) writes zeros."""

    index = None

    def _nothing(self, *args):
        return None

    memset = memcpy_htod = memcpy_htod_async = memcpy_dtod = memcpy_peer = synchronize = _nothing

    def memcpy_dtoh(self, dst=None, src=None, nbytes=0, *stream):
        if not READS.zeros:
            raise NotImplementedError(NO_DATA)
        ctypes.memset(dst, 0, nbytes)

    memcpy_dtoh_async = memcpy_dtoh


class _NoBlock:
    __slots__ = ()
    ptr = 0


class MetaAllocator:
    """The meta device's "allocator": every block is address 0 and nothing is counted."""

    device = _device("meta")
    device_str = "meta"
    launch_device = "meta"      # kernel launchers skip launches on it (runtime.launcher)
    backend = MetaBackend()
    release_on_free = False
    _block = _NoBlock()

    def malloc(self, nbytes, *args, **kwargs):
        return self._block

    def free(self, block, *args, **kwargs):
        return None
