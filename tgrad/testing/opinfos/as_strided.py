"""OpInfos for as_strided and the ops autograd records for views: as_strided's backward (restride) and in-place
on views (CopySlices)."""
import numpy as np

from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

DT = (D.float32, D.float64)


def _as_strided_ref(x, size, stride, storage_offset=0):
    idx = np.asarray(storage_offset)
    for k, (s, st) in enumerate(zip(size, stride)):
        idx = idx + (np.arange(s) * st).reshape([-1 if i == k else 1 for i in range(len(size))])
    return x.reshape(-1)[idx]


def _as_strided_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, (6,)), size=(2, 2), stride=(1, 2), storage_offset=1),
            SampleInput(rng.uniform(-1, 1, (3, 4)), size=(4, 3), stride=(1, 4), storage_offset=0),
            SampleInput(rng.uniform(-1, 1, (5,)), size=(3, 2), stride=(1, 1), storage_offset=0)]  # overlapping


def _mul_into_rows(x, v):
    """y = x.clone(); y[1:3] *= v (in place on a view of a non-leaf)."""
    y = x.clone()
    y[1:3].mul_(v)
    return y


def _mul_into_rows_ref(x, v):
    y = x.copy()
    y[1:3] *= v
    return y


def _add_into_column(x, v):
    """y = x * 2; y.t()[0] += v (through a transposed view)."""
    y = x * 2
    y.t()[0].add_(v)
    return y


def _add_into_column_ref(x, v):
    y = x * 2
    y[:, 0] += v
    return y


OPS = [
    OpInfo("as_strided", lambda x, **kw: x.as_strided(**kw), _as_strided_ref, _as_strided_samples, dtypes=DT,
           noncontig=False, covers=("restride",)),
    OpInfo("as_strided_", lambda x, **kw: x.clone().as_strided_(**kw), _as_strided_ref, _as_strided_samples,
           dtypes=DT, noncontig=False, covers=("restride",)),
    OpInfo("inplace_on_view", _mul_into_rows, _mul_into_rows_ref,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (3,))),
                        SampleInput(rng.uniform(-1, 1, (5,)), rng.uniform(-1, 1, ()))],
           dtypes=DT, covers=("copy_slices", "restride")),
    OpInfo("inplace_on_transposed_view", _add_into_column, _add_into_column_ref,
           lambda rng: [SampleInput(rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3,)))],
           dtypes=DT, covers=("copy_slices", "restride")),
]
