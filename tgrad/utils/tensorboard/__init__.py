"""``tgrad.utils.tensorboard``: ``SummaryWriter`` writes TensorBoard event files, as ``torch.utils.tensorboard``
does, through the ``tensorboard`` package's own event writer and protocol buffers (``pip install tensorboard``;
the ``tensorboard`` extra)."""
try:
    import tensorboard
except ImportError as e:      # PyTorch's message when the package is missing or too old
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above") from e
if tuple(int(p) for p in tensorboard.__version__.split(".")[:2]) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
