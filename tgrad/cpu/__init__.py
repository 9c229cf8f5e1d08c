"""``tgrad.cpu``: the cpu device's namespace, as ``torch.cpu`` (``amp``, ``is_available``, ``device_count``,
``synchronize``, ``current_device``)."""
from . import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: cpu kernels run synchronously."""
