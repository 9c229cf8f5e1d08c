"""DLPack interchange, as ``torch.utils.dlpack``: ``from_dlpack(obj)`` and ``to_dlpack(tensor)``.

cpu tensors are exchanged through numpy's DLPack implementation with zero
copies: ``Tensor.__dlpack__`` hands out numpy's capsule over the tensor's own
memory (the capsule keeps the storage alive), and ``from_dlpack`` views the
producer's memory through ``np.from_dlpack`` and ``tgrad.from_numpy``.
DLPack tensors on other devices are refused with a clear error.
"""
import ctypes
import enum

import numpy as np

from .._creation import from_numpy
from ..tensor import Tensor


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3


_INVALID = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you "
            "might have already constructed a tensor from it once.")
_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_IsValid.argtypes, _IsValid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_GetPointer.argtypes, _GetPointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p


class _LegacyCapsule:
    """A bare "dltensor" capsule (``to_dlpack``'s result) dressed as a producer for ``np.from_dlpack``."""

    def __init__(self, capsule):
        if type(capsule).__name__ != "PyCapsule" or not _IsValid(capsule, b"dltensor"):
            raise RuntimeError(_INVALID)
        self.capsule = capsule

    def __dlpack_device__(self):
        # DLManagedTensor starts with a DLTensor: void *data; DLDevice {int32 device_type; int32 device_id}
        dev = (ctypes.c_int32 * 2).from_address(_GetPointer(self.capsule, b"dltensor") + ctypes.sizeof(ctypes.c_void_p))
        return int(dev[0]), int(dev[1])

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule


def to_dlpack(tensor):
    """A DLPack capsule viewing ``tensor``'s memory (consume it once, e.g. with ``np.from_dlpack``)."""
    return tensor.__dlpack__()


def from_dlpack(ext_tensor):
    """A tgrad tensor sharing memory with ``ext_tensor``: any object with ``__dlpack__``/``__dlpack_device__``
    (numpy arrays, tgrad or other frameworks' cpu tensors) or a DLPack capsule."""
    producer = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _LegacyCapsule(ext_tensor)
    dev_type, dev_id = producer.__dlpack_device__()
    if dev_type != DLDeviceType.kDLCPU:
        name = DLDeviceType(dev_type).name if dev_type in DLDeviceType._value2member_map_ else str(dev_type)
        raise RuntimeError(f"tgrad.from_dlpack: DLPack tensors on device {name}:{dev_id} are not supported; "
                           "only cpu (kDLCPU) memory can be shared")
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()      # the same memory, a new tensor (what the capsule round trip gives)
    return from_numpy(np.from_dlpack(producer))
