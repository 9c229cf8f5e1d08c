"""Random generators.  The cpu device's is PyTorch's CPU generator: an mt19937 engine seeded as PyTorch
seeds it (numpy's ``MT19937`` with legacy seeding produces the same 32-bit words), whose words the
sampling kernels transform exactly as PyTorch's CPU kernels do (tgrad/kernels/random.py), so a seeded
program draws PyTorch's numbers.  A cuda device's generator is a Philox key (the seed) and a counter
offset: every draw of ``n`` numbers uses counters ``offset .. offset + n - 1`` and advances the offset
(PyTorch's cuda stream differs from its cpu stream too).
"""
import contextlib
import ctypes
import math
import os
import struct
import threading
import time
import weakref

import numpy as np

from . import dtypes as D
from .device import device as Device
from .kernels.random import libm
from .kernels.runtime.native import mt19937_fill
from .tensor import empty, from_host

_DEFAULT_SEED = 67280421310721
_MT_N = 624
# PyTorch's CPUGeneratorImplState: the_initial_seed (u64), left (i32), seeded (i32), next (u64), state (624 u64),
# normal_x/y/rho (f64), normal_is_valid (i32), next_float_normal_sample (f32), its valid flag (bool), padding
_STATE_BYTES = 5056
_generators = weakref.WeakSet()


def _reset_locks_in_child():
    """A forked child inherits locks in whatever state another thread left them: start with fresh ones."""
    for g in list(_generators):
        g._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_in_child)


class Generator:
    """``tgrad.Generator(device='cpu')``: on cpu PyTorch's mt19937 generator (the same words, state and
    byte state as ``torch.Generator()``); on cuda a Philox seed and counter offset.  ``_philox=True`` makes
    a cpu generator with the cuda stream (to compare devices)."""

    def __init__(self, device="cpu", *, _philox=False):
        self.device = Device(device)
        self._lock = threading.Lock()
        self._mt = None if (_philox or self.device.type != "cpu") else np.random.MT19937(0)
        self.manual_seed(_DEFAULT_SEED)
        _generators.add(self)

    def manual_seed(self, seed):
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= 0xFFFF_FFFF_FFFF_FFFF:
            raise RuntimeError(f"Overflow when unpacking long long: seed {seed} out of range")
        with self._lock:
            self._seed = seed & 0xFFFF_FFFF_FFFF_FFFF
            self._offset = 0
            self._normal = None             # the cached second sample of a double normal pair
            if self._mt is not None:
                self._mt._legacy_seeding(self._seed & 0xFFFFFFFF)   # mt19937(seed): the low 32 bits
                self._fresh = True          # PyTorch's `next` field is 0 until the first word
                self._normal_f = None       # (PyTorch keeps a float one too; its kernels never set it)
        return self

    def seed(self):
        s = int(time.time_ns()) & 0xFFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    # ------------------------------------------------------------ state
    def get_state(self):
        """PyTorch's byte state: a uint8 tensor (5056 bytes on cpu, the layout of ``torch.get_rng_state()``;
        16 bytes on cuda: seed and offset)."""
        if self._mt is None:
            b = struct.pack("<QQ", self._seed, self._offset)
        else:
            with self._lock:
                st = self._mt.state["state"]
                pos = int(st["pos"])
                nxt = 0 if self._fresh else pos
                left = 1 if (self._fresh or pos >= _MT_N) else _MT_N + 1 - pos
                b = struct.pack("<QiiQ", self._seed, left, 1, nxt) + st["key"].astype("<u8").tobytes()
                b += struct.pack("<dddi", 0.0, self._normal or 0.0, 0.0, self._normal is not None)
                b += struct.pack("<f?", self._normal_f or 0.0, self._normal_f is not None)
                b += bytes(_STATE_BYTES - len(b))
        return from_host(np.frombuffer(b, np.uint8).copy(), D.uint8, Device("cpu"))

    def set_state(self, new_state):
        if getattr(new_state, "dtype", None) is not D.uint8:
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        b = new_state._host_copy().tobytes()
        if self._mt is None:
            if len(b) != 16:
                raise RuntimeError("RNG state is wrong size")
            with self._lock:
                self._seed, self._offset = struct.unpack("<QQ", b)
            return self
        if len(b) != _STATE_BYTES:
            raise RuntimeError("Expected either a THGeneratorState of size 5048 or a CPUGeneratorImplState of "
                               f"size 5056 but found the input RNG state size to be {len(b)}")
        seed, left, _, nxt = struct.unpack_from("<QiiQ", b, 0)
        key = np.frombuffer(b, "<u8", _MT_N, 24).astype(np.uint32)
        _, y, _, valid = struct.unpack_from("<dddi", b, 24 + 8 * _MT_N)
        fy, fvalid = struct.unpack_from("<f?", b, 24 + 8 * _MT_N + 28)
        with self._lock:
            self._seed = seed
            self._fresh = nxt == 0
            self._mt.state = {"bit_generator": "MT19937",
                              "state": {"key": key, "pos": _MT_N if left <= 1 else _MT_N + 1 - left}}
            self._normal = y if valid else None
            self._normal_f = fy if fvalid else None
        return self

    def clone_state(self):
        """(private) a copy of the state to restore with ``set_state`` (as ``get_state``)."""
        return self.get_state()

    # ------------------------------------------------------------ draws
    def _raw(self, n):
        """The next ``n`` 32-bit words of the mt19937 stream (numpy uint32)."""
        out = np.empty(max(n, 0), np.uint32)
        if n > 0:
            self._fill(out.ctypes.data, n)
        return out

    def _fill(self, address, n):
        """Write the next ``n`` > 0 words of the mt19937 stream at host ``address``: aten_cpu.c's
        ``mt19937_fill`` on numpy's engine state, else numpy's ``random_raw`` (the same words, ~4x slower)."""
        fill = mt19937_fill()
        with self._lock:
            self._fresh = False
            if fill is None:
                np.ctypeslib.as_array((ctypes.c_uint32 * n).from_address(address))[:] = self._mt.random_raw(n)
                return
            with self._mt.lock:
                fill(self._mt.ctypes.state_address, address, n)

    def _raw64(self, n):
        """``n`` 64-bit draws (PyTorch's ``random64``: the first word is the high half)."""
        w = self._raw(2 * n).astype(np.uint64)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    def _take(self, n):
        """Reserve ``n`` draws for a kernel.  cuda (Philox): (key, first counter).  cpu (mt19937): a new
        contiguous int32 tensor holding the next ``n`` words (kernels read them as uint32)."""
        if self._mt is not None:
            w = empty((n,), D.int32, self.device)
            if n:
                self._fill(w.data_ptr(), n)
            return w
        with self._lock:
            off = self._offset
            # round up to a multiple of 4 as Philox produces 4 words per counter block
            self._offset += (n + 3) // 4 * 4
        # fold the 64-bit seed into Philox's 32-bit key
        key = (self._seed ^ (self._seed >> 32)) & 0xFFFFFFFF
        return key, off

    def _bernoulli_rng(self, n):
        """The draws of ``n`` bernoulli trials as a kernel's keyword arguments: ``words`` (cpu: two words per
        trial, PyTorch's double uniform) or the Philox ``seed`` and ``offset``."""
        r = self._take(n * (1 if self._mt is None else 2))
        return dict(zip(("seed", "offset"), r)) if isinstance(r, tuple) else {"words": r}

    def _refill(self, address, n):
        """Write the next ``n`` words at host ``address`` (``tgrad.compile``'s replay of a ``_take``)."""
        if n:
            self._fill(address, n)

    @contextlib.contextmanager
    def _serial(self):
        """The draws of ATen's serial cpu samplers (poisson, binomial, gamma), one at a time: ``uniform()`` is
        ``at::uniform_real_distribution<double>(0, 1)`` (53 bits of ``random64``), ``normal()`` is
        ``at::normal_distribution<double>`` (the cached second value of a pair first).  Words are read
        ahead in blocks; on exit the engine stands just after the words used."""
        with self._lock:
            s = _Serial(self)
            try:
                yield s
            finally:
                s.close()

    def _normal_pairs(self, n):
        """``n`` draws of PyTorch's ``at::normal_distribution<double>`` (standard), one after another: a
        fresh pair takes two 53-bit uniforms u1, u2 (4 words), r = sqrt(-2 log1p(-u2)), theta = 2 pi u1,
        returns r cos(theta) and keeps r sin(theta) in the generator for the next draw.  Host float64 maths:
        the values are glibc's correctly rounded log1p/sin/cos, which a kernel cannot reproduce."""
        out = np.empty(n, np.float64)
        if n == 0:
            return out
        with self._lock:
            cached = self._normal
        i = 0
        if cached is not None:
            out[0] = cached
            i = 1
        m = (n - i + 1) // 2
        u = (self._raw64(2 * m) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
        r = np.sqrt(-2.0 * libm("log1p", -u[1::2]))
        theta = 2.0 * np.pi * u[0::2]
        sin = libm("sin", theta)
        out[i::2] = (r * libm("cos", theta))[: len(out[i::2])]
        out[i + 1::2] = (r * sin)[: len(out[i + 1::2])]
        with self._lock:
            self._normal = float(r[-1] * sin[-1]) if (n - i) % 2 else None
        return out


class _Serial:
    """One serial sampling pass of a cpu generator (see ``Generator._serial``; its lock is held)."""

    _BLOCK = 4096

    def __init__(self, g):
        self._g = g
        self._start = g._mt.state if g._mt is not None else None
        # a cuda generator: numpy's Philox4x64 keyed by the seed from the generator's counter offset (its
        # kernels' Philox4x32 stream is another function of the same counters)
        self._philox = None if g._mt is not None else np.random.Philox(key=g._seed, counter=g._offset)
        self._buf = []
        self._pos = 0
        self._used = 0
        self._cached = g._normal

    def uniform(self):
        if self._pos == len(self._buf):
            if self._philox is not None:
                u = self._philox.random_raw(self._BLOCK // 2) & np.uint64((1 << 53) - 1)
            else:
                w = self._g._mt.random_raw(self._BLOCK).astype(np.uint64)
                u = ((w[0::2] << np.uint64(32)) | w[1::2]) & np.uint64((1 << 53) - 1)
            self._buf = (u.astype(np.float64) * 2.0 ** -53).tolist()
            self._pos = 0
        self._pos += 1
        self._used += 2
        return self._buf[self._pos - 1]

    def normal(self):
        if self._cached is not None:
            v, self._cached = self._cached, None
            return v
        u1 = self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._cached = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self):
        """Put the engine just after the words used and keep the cached normal (the generator's lock held)."""
        g = self._g
        g._normal = self._cached
        if self._philox is not None:
            g._offset += self._used         # >= the Philox blocks used (one per 8 words)
            return
        g._mt.state = self._start
        if self._used:
            g._mt.random_raw(self._used)
            g._fresh = False


default_generator = Generator()
cuda_generators = {}        # device index -> Generator: one per cuda device, made on first use (PyTorch's
                            # torch.cuda.default_generators)
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


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Forks the RNG: on exit the cpu generator (and the cuda generators of ``devices``, every cuda
    generator made so far when None) get back the state they had on entry."""
    if not enabled:
        yield
        return
    cpu = default_generator.get_state()
    idx = list(cuda_generators) if devices is None else [d if isinstance(d, int) else Device(d).index or 0
                                                        for d in devices]
    cuda = {i: default_generator_for(Device("cuda", i)).get_state() for i in idx}
    try:
        yield
    finally:
        default_generator.set_state(cpu)
        for i, s in cuda.items():
            cuda_generators[i].set_state(s)
