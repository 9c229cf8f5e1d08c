"""utils.data.StackDataset: tuple and dict stacking, batched __getitems__, collation, PyTorch's errors."""
import pytest

import tgrad
from tgrad.utils.data import DataLoader, StackDataset, TensorDataset


class _Batched(TensorDataset):
    """Counts batch requests: StackDataset must use __getitems__ where a dataset has it."""
    calls = 0

    def __getitems__(self, indices):
        type(self).calls += 1
        return [self[i] for i in indices]


def test_stack_dataset():
    a = _Batched(tgrad.arange(6.).view(3, 2))
    b = tgrad.arange(3) * 10
    s = StackDataset(a, b)
    assert len(s) == 3 and s[1][0][0].tolist() == [2.0, 3.0] and s[1][1].item() == 10
    d = StackDataset(x=a, y=b)
    batch = d.__getitems__([0, 2])
    assert _Batched.calls == 1 and [sorted(x) for x in batch] == [["x", "y"], ["x", "y"]]
    assert batch[1]["y"].item() == 20
    loaded = list(DataLoader(d, batch_size=2))
    assert loaded[0]["x"][0].tolist() == [[0.0, 1.0], [2.0, 3.0]] and loaded[1]["y"].tolist() == [20]
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(a, y=b)
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, tgrad.arange(4))
