"""Legacy typed constructors: ``tgrad.FloatTensor(3, 3)``, ``tgrad.LongTensor([1, 2])``, isinstance checks."""
from . import _creation as creation, dtypes as D
from .tensor import Tensor


class _TensorTypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"


def _make(name, dt):
    def __new__(cls, *args, device=None):
        if len(args) == 1 and not isinstance(args[0], int):
            return creation.tensor(args[0], dtype=dt, device=device)
        return creation.zeros(*args, dtype=dt, device=device) if args else creation.empty(0, dtype=dt)
    return _TensorTypeMeta(name, (), {"dtype": dt, "__new__": __new__,
                                      "__doc__": f"Legacy constructor of {dt} tensors."})


FloatTensor = _make("FloatTensor", D.float32)
DoubleTensor = _make("DoubleTensor", D.float64)
HalfTensor = _make("HalfTensor", D.float16)
BFloat16Tensor = _make("BFloat16Tensor", D.bfloat16)
LongTensor = _make("LongTensor", D.int64)
IntTensor = _make("IntTensor", D.int32)
ShortTensor = _make("ShortTensor", D.int16)
CharTensor = _make("CharTensor", D.int8)
ByteTensor = _make("ByteTensor", D.uint8)
BoolTensor = _make("BoolTensor", D.bool_)
