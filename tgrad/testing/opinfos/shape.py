"""OpInfos for view/shape ops."""
import numpy as np

from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

DT = (D.float32, D.float64, D.int64, D.bool_)


def _s(*shapes):
    return lambda rng: [SampleInput(rng.uniform(-1, 1, s)) for s in shapes]


OPS = [
    OpInfo("view", lambda x: x.view(-1, 2), lambda x: x.reshape(-1, 2), _s((2, 3), (4, 1, 2)), dtypes=DT),
    OpInfo("reshape_copy", lambda x: x.t().reshape(6), lambda x: x.T.reshape(6), _s((2, 3)), dtypes=DT,
           covers=("unsafe_view", "clone", "t")),
    OpInfo("expand", lambda x: x.expand(2, 3, 4), lambda x: np.broadcast_to(x, (2, 3, 4)),
           _s((3, 1), (4,), (1, 3, 4)), dtypes=DT),
    OpInfo("permute", lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1), _s((2, 3, 4)), dtypes=DT),
    OpInfo("transpose", lambda x: x.transpose(0, -1), lambda x: np.swapaxes(x, 0, -1), _s((2, 3), (2, 3, 4)),
           dtypes=DT),
    OpInfo("t", lambda x: x.t(), lambda x: x.T, _s((2, 3), (5,)), dtypes=DT),
    OpInfo("squeeze", lambda x: x.squeeze(1), lambda x: np.squeeze(x, 1), _s((2, 1, 3)), dtypes=DT),
    OpInfo("unsqueeze", lambda x: x.unsqueeze(-1), lambda x: x[..., None], _s((2, 3), ()), dtypes=DT),
    OpInfo("select", lambda x: x[1], lambda x: x[1], _s((3, 4), (2, 3, 4)), dtypes=DT,
           covers=("select_backward",)),
    OpInfo("slice", lambda x: x[1:5:2], lambda x: x[1:5:2], _s((7,), (6, 3)), dtypes=DT,
           covers=("slice_backward",)),
    OpInfo("alias", lambda x: x[...], lambda x: x, _s((2, 3)), dtypes=DT),
]
