"""The random generator: a Philox key (the seed) and a counter offset.

``manual_seed(s)`` resets the default generator; every draw of ``n`` numbers
uses counters ``offset .. offset + n - 1`` and advances the offset, so results
do not depend on device or block size.
"""
import os
import threading
import time
import weakref

from . import dtypes as D
from .device import device as Device, get_default_device
from .tensor import from_host

_DEFAULT_SEED = 67280421310721


_generators = weakref.WeakSet()


def _reset_locks_in_child():
    """A forked child inherits locks in whatever state another thread left them: start with fresh ones."""
    for g in list(_generators):
        g._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_in_child)


class Generator:
    """``tgrad.Generator(device='cpu')``: a seed and a Philox counter offset."""

    def __init__(self, device="cpu"):
        self.device = Device(device)
        self._seed = _DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()
        _generators.add(self)

    def manual_seed(self, seed):
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= 0xFFFF_FFFF_FFFF_FFFF:
            raise RuntimeError(f"Overflow when unpacking long long: seed {seed} out of range")
        with self._lock:
            self._seed = seed & 0xFFFF_FFFF_FFFF_FFFF
            self._offset = 0
        return self

    def seed(self):
        s = int(time.time_ns()) & 0xFFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return from_host([self._seed & 0xFFFFFFFF, self._seed >> 32, self._offset & 0xFFFFFFFF,
                          self._offset >> 32], D.int64, get_default_device())

    def set_state(self, state):
        v = [int(x) for x in state.tolist()]
        with self._lock:
            self._seed = v[0] | (v[1] << 32)
            self._offset = v[2] | (v[3] << 32)
        return self

    def _take(self, n):
        """Reserve ``n`` counters; returns (philox key, first counter)."""
        with self._lock:
            off = self._offset
            # round up to a multiple of 4 as Philox produces 4 words per counter block
            self._offset += (n + 3) // 4 * 4
        # fold the 64-bit seed into Philox's 32-bit key
        key = (self._seed ^ (self._seed >> 32)) & 0xFFFFFFFF
        return key, off


default_generator = Generator()
cuda_generators = {}        # device index -> Generator: one per cuda device, made on first use (PyTorch's
                            # torch.cuda.default_generators); same seed and draws -> the cpu's numbers
_last_seed = [None]         # the last manual_seed, for cuda generators made after it


def default_generator_for(device):
    """The default generator of ``device`` (a tgrad.device): the cpu one, or its cuda device's."""
    if device.type == "cpu":
        return default_generator
    idx = device.index or 0
    g = cuda_generators.get(idx)
    if g is None:
        g = cuda_generators[idx] = Generator(f"cuda:{idx}")
        if _last_seed[0] is not None:
            g.manual_seed(_last_seed[0])
    return g


def manual_seed_cuda(seed, index=None):
    """Seed cuda device ``index``'s generator (every cuda device's when None)."""
    if index is None:
        _last_seed[0] = int(seed)
        for g in cuda_generators.values():
            g.manual_seed(seed)
    else:
        default_generator_for(Device("cuda", index)).manual_seed(seed)


def manual_seed(seed):
    """Seed the default generator and every cuda device's (PyTorch's ``torch.manual_seed``)."""
    manual_seed_cuda(seed)
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)
