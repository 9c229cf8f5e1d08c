"""The fake CUDA driver (tests/fakecuda): its API checks, its stream semantics, and tgrad's cuda path on it.

Each test runs a fresh Python on the fake driver (``fakecuda.run_python``): the driver is per process
(device count and compute capability are fixed at ``cuInit``), and the cpu suite keeps a process with
no CUDA at all.  Every cuda result is compared with numpy or with the same computation on ``cpu``.
"""
import os
import shutil
import subprocess
import sys

import pytest

import fakecuda

try:
    fakecuda.build()
    _skip = None
except fakecuda.Unavailable as e:
    _skip = str(e)

pytestmark = pytest.mark.skipif(_skip is not None, reason=_skip or "")


DRIVER_API = r'''
import ctypes, numpy as np
from ctypes import byref, c_int, c_void_p, c_uint64, c_size_t, c_float, c_char_p, c_uint
from tgrad.memory import cuda_driver as cd
lib = cd._driver()[0]
lib.cuPointerGetAttribute.argtypes = [c_void_p, c_int, c_uint64]
lib.cuModuleLoadData.argtypes = [ctypes.POINTER(c_void_p), c_char_p]
lib.cuMemsetD8Async.argtypes = [c_uint64, ctypes.c_ubyte, c_size_t, c_void_p]
def rc(name, *a):
    return getattr(lib, name)(*a)
def ok(name, *a):
    r = rc(name, *a)
    assert r == 0, (name, r)
n = c_int(); ok("cuDeviceGetCount", byref(n)); assert n.value == 2
major, minor = c_int(), c_int()
ok("cuDeviceGetAttribute", byref(major), 75, 1); ok("cuDeviceGetAttribute", byref(minor), 76, 1)
assert major.value * 10 + minor.value == CC
props = cd.device_properties(1)
assert props["major"] * 10 + props["minor"] == CC and props["name"].endswith("(fakecuda)"), props
assert rc("cuDeviceGet", byref(n), 2) == 101                     # CUDA_ERROR_INVALID_DEVICE
p = c_uint64()
assert rc("cuMemAlloc_v2", byref(p), 1024) == 201                # no current context
ctx0, ctx1 = cd.context_handle(0), cd.context_handle(1)
ok("cuCtxSetCurrent", ctx0)
ok("cuMemAlloc_v2", byref(p), 4096)
free, total = c_size_t(), c_size_t()
ok("cuMemGetInfo_v2", byref(free), byref(total)); assert total.value - free.value == 4096
host = np.arange(1024, dtype=np.float32)
ok("cuMemcpyHtoD_v2", p, host.ctypes.data, 4096)
back = np.zeros_like(host)
ok("cuMemcpyDtoH_v2", back.ctypes.data, p, 4096); assert (back == host).all()
# device memory is host memory at its own addresses; host memory is not device memory
attr = c_uint64()
ok("cuPointerGetAttribute", byref(attr), 3, p)                   # DEVICE_POINTER
assert rc("cuPointerGetAttribute", byref(attr), 3, host.ctypes.data) == 1
assert rc("cuMemcpyDtoD_v2", p, c_uint64(host.ctypes.data), 16) == 1    # a host pointer as device memory
assert rc("cuMemcpyHtoD_v2", c_uint64(p.value + 4000), host.ctypes.data, 200) == 1   # out of range
dev = c_int(); ok("cuPointerGetAttribute", byref(dev), 9, p); assert dev.value == 0   # DEVICE_ORDINAL
# memset and async copies are queued: the data changes at a synchronization point, not before
ok("cuMemsetD8_v2", p, 0, 4096)
ok("cuMemsetD8Async", c_uint64(p.value), 0, 4096, None)
raw = np.ctypeslib.as_array(ctypes.cast(p.value, ctypes.POINTER(ctypes.c_float)), (1024,))
assert (raw == host).all()                                       # nothing ran yet
s = c_void_p(); ok("cuStreamCreate", byref(s), 0)
e0, e1 = c_void_p(), c_void_p()
ok("cuEventCreate", byref(e0), 0); ok("cuEventCreate", byref(e1), 0)
ok("cuEventRecord", e0, s)
pinned = c_void_p(); ok("cuMemHostAlloc", byref(pinned), 4096, 1)
pin = np.ctypeslib.as_array(ctypes.cast(pinned.value, ctypes.POINTER(ctypes.c_float)), (1024,))
pin[:] = 7
ok("cuMemcpyHtoDAsync_v2", p, pinned, 4096, s)                   # after the legacy stream's memsets
ok("cuEventRecord", e1, s)
assert rc("cuEventQuery", e1) == 600                             # CUDA_ERROR_NOT_READY
ok("cuEventSynchronize", e1)
assert (raw == 7).all()
ms = c_float(); ok("cuEventElapsedTime", byref(ms), e0, e1); assert ms.value >= 0
pin[:] = 0
ok("cuMemcpyDtoHAsync_v2", pinned, p, 4096, s)                   # to pinned memory: done at the sync
assert (pin == 0).all()
ok("cuStreamSynchronize", s); assert (pin == 7).all()
# between devices: cuMemcpyPeer
ok("cuCtxSetCurrent", ctx1)
q = c_uint64(); ok("cuMemAlloc_v2", byref(q), 4096)
ok("cuPointerGetAttribute", byref(dev), 9, q); assert dev.value == 1
ok("cuMemcpyPeer", q, ctx1, p, ctx0, 4096)
back[:] = 0; ok("cuMemcpyDtoH_v2", back.ctypes.data, q, 4096); assert (back == 7).all()
# use after free; a module that is not a cubin; a stream of another context
ok("cuMemFree_v2", q)
assert rc("cuMemcpyDtoH_v2", back.ctypes.data, q, 16) == 1
assert rc("cuMemFree_v2", q) == 1
mod = c_void_p()
assert rc("cuModuleLoadData", byref(mod), b"not a cubin") == 200     # CUDA_ERROR_INVALID_IMAGE
assert rc("cuStreamSynchronize", s) == 400                       # s belongs to cuda:0
ok("cuCtxSetCurrent", ctx0)
ok("cuMemFree_v2", p)
ok("cuMemFreeHost", pinned)
print("ok")
'''


@pytest.mark.parametrize("cc", [80, 90])
def test_driver_api(cc):
    assert fakecuda.run_python(f"CC = {cc}\n" + DRIVER_API, devices=2, cc=cc).strip().endswith("ok")


KERNELS = r'''
import numpy as np
rng = np.random.default_rng(0)
a, b = rng.standard_normal((33, 70)).astype(np.float32), rng.standard_normal((70, 5)).astype(np.float32)
for dev in ("cpu", "cuda"):
    x, w = tgrad.tensor(a, device=dev, requires_grad=True), tgrad.tensor(b, device=dev, requires_grad=True)
    y = tgrad.softmax(x @ w, dim=1)
    loss = (y * y).sum()
    loss.backward()
    out = [y.detach().cpu().numpy(), x.grad.cpu().numpy(), w.grad.cpu().numpy()]
    if dev == "cpu":
        ref = out
for o, r in zip(out, ref):
    np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)
import fakecuda
lib = fakecuda.install()
assert lib.fakecuda_launch_count() >= 6, lib.fakecuda_launch_count()
assert not fakecuda.ERRORS, fakecuda.ERRORS
print("ok")
'''


@pytest.mark.parametrize("cc", [80, 90])
def test_kernels_compiled_for_the_device_run_on_the_host(cc):
    assert fakecuda.run_python(KERNELS, cc=cc).strip().endswith("ok")


MISSING_SYNC = r'''
import ctypes, numpy as np
x = tgrad.arange(8, dtype=tgrad.float32, device="cuda")
tgrad.cuda.synchronize()
y = x * 2                                       # queued on the stream, not run yet
raw = np.ctypeslib.as_array(ctypes.cast(y.data_ptr(), ctypes.POINTER(ctypes.c_float)), (8,))
before = raw.copy()
tgrad.cuda.synchronize()
assert not (before == np.arange(8) * 2).all(), before      # read without a synchronize: wrong data
assert (raw == np.arange(8) * 2).all(), raw
assert (y.cpu().numpy() == np.arange(8) * 2).all()          # a copy to the host synchronizes
print("ok")
'''


def test_a_missing_synchronize_reads_wrong_data():
    assert fakecuda.run_python(MISSING_SYNC).strip().endswith("ok")


def test_compiler_is_the_one_triton_uses():
    cc = fakecuda.compiler()
    assert shutil.which(cc) or cc.startswith("/")


CPU_SCALARS = r'''
import numpy as np
x = tgrad.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
s = tgrad.tensor(10.0, device="cpu", requires_grad=True)
y = (x + s) * tgrad.tensor(2.0, device="cpu")
assert y.device == tgrad.device("cuda:0")
np.testing.assert_array_equal(y.detach().cpu().numpy(), [22.0, 24.0, 26.0])
y.sum().backward()
assert s.grad.device.type == "cpu" and float(s.grad) == 6.0           # the cpu scalar's gradient stays on cpu
np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, 2.0, 2.0])
z = tgrad.ones(3, device="cuda")
z.add_(tgrad.tensor(4.0, device="cpu"))
z.mul_(tgrad.tensor(0.5, device="cpu"))
np.testing.assert_array_equal(z.cpu().numpy(), [2.5, 2.5, 2.5])
try:
    tgrad.ones(3, device="cuda") + tgrad.ones(3, device="cpu")     # only 0-d cpu tensors join
    raise SystemExit("no error")
except RuntimeError as e:
    assert "Expected all tensors to be on the same device" in str(e)
print("ok")
'''


def test_bug1_zero_dim_cpu_operands_are_moved_like_pytorch():
    assert fakecuda.run_python(CPU_SCALARS).strip().endswith("ok")


SECOND_DEVICE = r'''
import threading, numpy as np
import fakecuda
a = np.arange(6, dtype=np.float32).reshape(2, 3)
x = tgrad.tensor(a, device="cuda:1")
assert tgrad.cuda.current_device() == 0
y = (x @ x.t() + 1).softmax(dim=1)
ref = tgrad.tensor(a, device="cpu") @ tgrad.tensor(a, device="cpu").t()
np.testing.assert_allclose(y.cpu().numpy(), (ref + 1).softmax(dim=1).numpy(), rtol=1e-6)
out = []
def work():                         # a new thread: its current device is 0, the tensors' is 1
    out.append((tgrad.ones(4, device="cuda:1") * 3).sum().cpu().numpy())
t = threading.Thread(target=work); t.start(); t.join()
assert out == [12.0], out
tgrad.cuda.set_device(1)
w = tgrad.ones(2, device="cuda:0") + 1          # set_device(1) does not send cuda:0's launches to device 1
np.testing.assert_array_equal(w.cpu().numpy(), [2.0, 2.0])
for d in (0, 1):
    tgrad.cuda.synchronize(d)
assert not fakecuda.ERRORS, fakecuda.ERRORS
print("ok")
'''


def test_bug2_launches_run_on_the_tensors_device_in_every_thread():
    assert fakecuda.run_python(SECOND_DEVICE, devices=2).strip().endswith("ok")


WRONG_DEVICE = r'''
import numpy as np
import fakecuda
from fakecuda.kernels import scale_kernel
from tgrad.kernels import runtime as _triton
from tgrad.memory.cuda_driver import CudaDriverError
x, y = tgrad.ones(4, device="cuda:1"), tgrad.empty(4, device="cuda:1")
args = [_triton.Ptr(x.data_ptr(), np.dtype("float32")), _triton.Ptr(y.data_ptr(), np.dtype("float32")), 4, 2.0]
_triton.launch(scale_kernel, (1,), "cuda:1", args, {"BLOCK": 16})
np.testing.assert_array_equal(y.cpu().numpy(), [2.0] * 4)
_triton.launch(scale_kernel, (1,), "cuda:0", args, {"BLOCK": 16})      # cuda:1's memory, launched on cuda:0
try:
    tgrad.cuda.synchronize(0)
    raise SystemExit("no error")
except CudaDriverError as e:
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in str(e), e
assert "x_ptr" in fakecuda.ERRORS[-1] and "memory of cuda:1, launched on cuda:0" in fakecuda.ERRORS[-1]
print("ok")
'''


def test_a_launch_on_the_wrong_device_fails_like_on_a_gpu():
    assert fakecuda.run_python(WRONG_DEVICE, devices=2).strip().endswith("ok")


PROPERTIES = r'''
props = tgrad.cuda.get_device_properties(0)
assert (props.major, props.minor) == (CC // 10, CC % 10) == tgrad.cuda.get_device_capability()
assert tgrad.cuda.get_device_name() == props.name == NAME, props.name
assert props.multi_processor_count == SMS and props.total_memory == 8192 << 20, props
assert repr(props).startswith(f"_CudaDeviceProperties(name='{NAME}', major={CC // 10}")
free0, total = tgrad.cuda.mem_get_info()
x = tgrad.empty(1 << 20, device="cuda")
free1, _ = tgrad.cuda.mem_get_info(0)
assert total == props.total_memory and free0 - free1 >= 4 << 20, (free0, free1)
print("ok")
'''


@pytest.mark.parametrize("cc,name,sms", [(80, "NVIDIA A100-SXM4-80GB (fakecuda)", 108),
                                         (90, "NVIDIA H100 80GB HBM3 (fakecuda)", 132)])
def test_bug7_device_name_and_properties_come_from_the_driver(cc, name, sms):
    code = f"CC, NAME, SMS = {cc}, {name!r}, {sms}\n" + PROPERTIES
    assert fakecuda.run_python(code, cc=cc).strip().endswith("ok")


STREAMS = r'''
import ctypes, numpy as np
x = tgrad.ones(1000, device="cuda")
s = tgrad.cuda.Stream()
start, end = tgrad.cuda.Event(enable_timing=True), tgrad.cuda.Event(enable_timing=True)
with tgrad.cuda.stream(s):
    assert tgrad.cuda.current_stream() == s != tgrad.cuda.default_stream()
    start.record()
    y = x * 2                                   # on s, after the default stream's fill of x
    end.record()
assert tgrad.cuda.current_stream() == tgrad.cuda.default_stream()
raw = np.ctypeslib.as_array(ctypes.cast(y.data_ptr(), ctypes.POINTER(ctypes.c_float)), (1000,))
assert not (raw == 2).all()                     # queued on s: not run yet
assert s.query() is False and s.query() is True # (the fake finishes pending work by the second query)
assert (raw == 2).all()
assert start.elapsed_time(end) >= 0.0
try:
    tgrad.cuda.Event().elapsed_time(tgrad.cuda.Event())
    raise SystemExit("no error")
except RuntimeError as e:
    assert "enable_timing=True" in str(e)
e = s.record_event()
tgrad.cuda.current_stream().wait_event(e)
z = (y + 1).cpu().numpy()
assert (z == 3).all()
print("ok")
'''


def test_streams_and_events():
    assert fakecuda.run_python(STREAMS).strip().endswith("ok")


TORCH_IMPORTED = r'''
import sys
sys.path.append(TORCH_SITE)
import torch                                     # a user comparing against PyTorch (CPU build here)
assert not torch.cuda.is_available()
import numpy as np
x = tgrad.arange(10, dtype=tgrad.float32, device="cuda")
s = tgrad.cuda.Stream()
with tgrad.cuda.stream(s):
    y = (x * 2).sum()                            # tgrad's driver and stream, not torch's
s.synchronize()
assert float(y.cpu()) == 90.0
assert torch.arange(3).sum().item() == 3 and "torch" in sys.modules
print("ok")
'''


def test_bug6_launches_use_tgrads_driver_and_stream_with_torch_imported():
    import glob
    site = glob.glob("/work/venv-torch/lib/python3*/site-packages")
    if not site or not glob.glob(site[0] + "/torch/__init__.py"):
        pytest.skip("needs PyTorch in /work/venv-torch")
    assert fakecuda.run_python(f"TORCH_SITE = {site[0]!r}\n" + TORCH_IMPORTED).strip().endswith("ok")


AOT_THEN_TRAIN = r'''
import glob, os, numpy as np
from tgrad import nn, optim
from tgrad.kernels import aot

def train(device):
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 5)).to(device)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    x, y = tgrad.randn(16, 20).to(device), tgrad.randint(0, 5, (16,)).to(device)
    tgrad.manual_seed(1)                   # cpu and cuda have a generator each: dropout's draws start equal
    losses = []
    for _ in range(3):                     # new dropout seeds/offsets and Adam step counts every step
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses

def cubins():
    return set(glob.glob(os.path.join(os.environ["TRITON_CACHE_DIR"], "*", "*.cubin")))

tgrad.set_default_device("cpu")
# cuda draws tgrad's Philox stream; the cpu default generator is PyTorch's mt19937: let the cpu run draw
# from a Philox generator too, so both runs launch the same kernels and see the same dropout masks
tgrad.random.default_generator = tgrad.random.Generator("cpu", _philox=True)
specs, _ = aot.record(lambda: train("cpu"), dry=False)       # on cpu, with the GPU's block sizes
failed = [r for r in aot.compile_all(specs, (90,)) if r.error]
assert not failed, failed
before = cubins()
assert len(before) >= len({s.name for s in specs}), len(before)
got = train("cuda")
new = cubins() - before
assert not new, f"{len(new)} kernels compiled while training after the AOT compile"
np.testing.assert_allclose(got, train("cpu"), rtol=1e-5)
print("ok")
'''


def test_bug3_bug4_aot_compiles_the_run_time_specializations_so_training_compiles_nothing(tmp_path):
    out = fakecuda.run_python(AOT_THEN_TRAIN, cc=90, env={"TRITON_CACHE_DIR": str(tmp_path)})
    assert out.strip().endswith("ok")


SCALARS_DO_NOT_WAIT = r'''
import numpy as np
a = np.arange(4096, dtype=np.float32)
g = tgrad.tensor(a, device="cpu").pin_memory().to("cuda", non_blocking=True)
h = (g * 2).to("cpu", non_blocking=True)              # queued: lands in pinned memory at the next sync
k = g * 3.0                                           # a Python number ...
m = g + tgrad.tensor(1.0, device="cpu")               # ... and a 0-d cpu tensor: no wait for the queued work
n = tgrad.tensor(0.5, device="cuda") * g
assert not (h.numpy() == 2 * a).all(), "a scalar operand waited for the device (synchronous copy)"
tgrad.cuda.synchronize()
np.testing.assert_array_equal(h.numpy(), 2 * a)
for t, want in ((k, 3 * a), (m, a + 1), (n, a / 2)):
    np.testing.assert_array_equal(t.cpu().numpy(), want)
w = tgrad.tensor(2.0, device="cpu", requires_grad=True)
(g * w).sum().backward()                              # a 0-d cpu leaf still gets its gradient
assert w.grad.device.type == "cpu" and float(w.grad) == float(a.sum())
print("ok")
'''


def test_scalar_operands_do_not_wait_for_the_device():
    assert fakecuda.run_python(SCALARS_DO_NOT_WAIT).strip().endswith("ok")


RECORD_STREAM = r'''
import numpy as np
def reused(record):
    s = tgrad.cuda.Stream()
    x = tgrad.ones(1 << 16, device="cuda")
    ptr = x.data_ptr()
    with tgrad.cuda.stream(s):
        y = x * 2                          # queued on s: reads x when s runs
    if record:
        x.record_stream(s)
    del x
    z = tgrad.full((1 << 16,), 7.0, device="cuda")   # on the default stream: may not take x's memory yet
    same = z.data_ptr() == ptr
    s.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), 2.0) if record else None
    del z
    w = tgrad.empty(1 << 16, device="cuda")
    return same, w.data_ptr() == ptr
assert reused(False) == (True, True)      # without record_stream the block is reused at once (the hazard)
assert reused(True) == (False, True)      # with it, only after the stream's work is done
try:
    tgrad.ones(2, device="cpu").record_stream(tgrad.cuda.current_stream())
    raise SystemExit("no error")
except NotImplementedError as e:
    assert "record_stream" in str(e)
print("ok")
'''


def test_record_stream_delays_reuse_until_the_stream_is_done():
    assert fakecuda.run_python(RECORD_STREAM).strip().endswith("ok")


TRAIN_MLP_ON_CUDA = r'''
import runpy, sys
from triton import knobs
compiled = []                       # Triton's compile listener: cache_hit False = a compile, not a cache load
knobs.compilation.listener = lambda src, cache_hit, **_: cache_hit or compiled.append(src.name)
sys.argv = ["train_mlp.py", "--fast", "--device", "cuda", "--out", OUT]
launches = fakecuda.install().fakecuda_launch_count()
runpy.run_path("examples/train_mlp.py", run_name="__main__")
assert fakecuda.install().fakecuda_launch_count() - launches > 1000      # it trained on the fake GPU
assert not compiled, f"{len(compiled)} kernels compiled while training after the AOT command: {compiled}"
print("ok")
'''


@pytest.mark.aot
def test_the_aot_command_compiles_every_kernel_train_mlp_launches_on_cuda(tmp_path, device):
    """``python -m tgrad.testing.aot_workload --arch 90 --run examples/train_mlp.py --fast`` into a fresh
    Triton cache, then train_mlp.py --device cuda on the fake sm_90 driver compiles nothing."""
    if device != "cuda":
        pytest.skip("minutes (two 3-epoch trainings in the interpreter): runs with --device cuda (CI's cuda step)")
    pytest.importorskip("sklearn")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"), PYTHONPATH=root, OPENBLAS_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "tgrad.testing.aot_workload", "--arch", "90", "--run",
                        "examples/train_mlp.py", "--fast", "--out", str(tmp_path)],
                       env=env, cwd=root, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = fakecuda.run_python(f"OUT = {str(tmp_path)!r}\n" + TRAIN_MLP_ON_CUDA, cc=90, timeout=1200,
                              env={"TRITON_CACHE_DIR": str(tmp_path / "triton")})
    assert out.strip().endswith("ok"), out


PINNED = r'''
import ctypes, numpy as np
from tgrad.utils.data import DataLoader, TensorDataset
a = np.arange(4096, dtype=np.float32)
x = tgrad.tensor(a, device="cpu")
assert not x.is_pinned()
p = x.pin_memory()
assert p.is_pinned() and p.device.type == "cpu" and p.pin_memory() is p
np.testing.assert_array_equal(p.numpy(), a)
g = p.to("cuda", non_blocking=True)             # queued on the current stream: returns at once
h = (g * 2).to("cpu", non_blocking=True)        # lands in pinned memory when the stream gets there
assert h.is_pinned()
assert not (h.numpy() == 2 * a).all()           # read before synchronizing: not there yet
tgrad.cuda.current_stream().synchronize()
np.testing.assert_array_equal(h.numpy(), 2 * a)
np.testing.assert_array_equal(x.to("cuda").cpu().numpy(), a)    # pageable: synchronous as before
# between two devices
y = g.to("cuda:1")
assert y.device == tgrad.device("cuda:1")
np.testing.assert_array_equal((y + 1).cpu().numpy(), a + 1)
# DataLoader(pin_memory=True)
dl = DataLoader(TensorDataset(tgrad.tensor(a.reshape(64, 64), device="cpu"), tgrad.arange(64, device="cpu")),
                batch_size=16, pin_memory=True)
xb, yb = next(iter(dl))
assert xb.is_pinned() and yb.is_pinned()
np.testing.assert_array_equal(xb.cuda(non_blocking=True).cpu().numpy(), a.reshape(64, 64)[:16])
try:
    g.pin_memory()
    raise SystemExit("no error")
except RuntimeError as e:
    assert "only dense CPU tensors can be pinned" in str(e)
print("ok")
'''


def test_pinned_memory_non_blocking_copies_and_two_devices():
    assert fakecuda.run_python(PINNED, devices=2).strip().endswith("ok")


GRAPH_API = r'''
import ctypes, numpy as np
from ctypes import byref, c_int, c_void_p, c_uint64, c_size_t
from tgrad.memory import cuda_driver as cd
import fakecuda
lib = cd._driver()[0]
assert cd.graphs_available()
lib.fakecuda_graph_nodes.restype = ctypes.c_ulonglong
lib.fakecuda_graph_nodes.argtypes = [c_void_p]
lib.cuStreamGetCaptureInfo_v2.argtypes = [c_void_p, ctypes.POINTER(c_int), ctypes.POINTER(c_uint64), c_void_p,
                                          c_void_p, c_void_p]
def rc(name, *a):
    return getattr(lib, name)(*a)
def ok(name, *a):
    r = rc(name, *a)
    assert r == 0, (name, r)
UNSUPPORTED, INVALIDATED, ISOLATION, IMPLICIT, ILLEGAL_STATE = 900, 901, 905, 906, 401
ok("cuCtxSetCurrent", cd.context_handle(0))
p = c_uint64(); ok("cuMemAlloc_v2", byref(p), 4096)
raw = np.ctypeslib.as_array(ctypes.cast(p.value, ctypes.POINTER(ctypes.c_uint8)), (4096,))
ok("cuMemsetD8_v2", p, 0, 4096); ok("cuCtxSynchronize")
pinned = c_void_p(); ok("cuMemHostAlloc", byref(pinned), 16, 1)
pin = np.ctypeslib.as_array(ctypes.cast(pinned.value, ctypes.POINTER(ctypes.c_uint8)), (16,))
pin[:] = 7
s = c_void_p(); ok("cuStreamCreate", byref(s), 0)
st, cid = c_int(), c_uint64()
assert rc("cuStreamBeginCapture_v2", None, 0) == UNSUPPORTED          # never on the legacy stream
ok("cuStreamBeginCapture_v2", s, 0)
assert rc("cuStreamBeginCapture_v2", s, 0) == ILLEGAL_STATE           # already capturing
ok("cuStreamIsCapturing", s, byref(st)); assert st.value == 1
ok("cuStreamGetCaptureInfo_v2", s, byref(st), byref(cid), None, None, None); assert st.value == 1 and cid.value
assert rc("cuStreamIsCapturing", None, byref(st)) == IMPLICIT          # the legacy stream waits on a capture
ok("cuMemsetD8Async", p, 1, 4096, s)                                  # recorded, not run
ok("cuMemcpyHtoDAsync_v2", p, pinned, 16, s)
q = c_uint64(); ok("cuMemAlloc_v2", byref(q), 512)                    # allowed while capturing
g = c_void_p(); ok("cuStreamEndCapture", s, byref(g))
assert lib.fakecuda_graph_nodes(g) == 2
ok("cuStreamIsCapturing", s, byref(st)); assert st.value == 0
ok("cuCtxSynchronize"); assert (raw == 0).all()                        # captured work never ran
e = c_void_p(); ok("cuGraphInstantiateWithFlags", byref(e), g, 0)
ok("cuGraphLaunch", e, s)
assert (raw == 0).all()                                               # queued: done at a sync point
ok("cuStreamSynchronize", s)
assert (raw[:16] == 7).all() and (raw[16:] == 1).all()
pin[:] = 9; raw[:] = 0
ok("cuGraphLaunch", e, None); ok("cuGraphLaunch", e, None)            # twice, on the legacy stream
ok("cuCtxSynchronize")
assert (raw[:16] == 9).all() and (raw[16:] == 1).all()                # a copy node reads its source at each launch
# what a capture rejects: the call fails and the capture is invalidated (no graph at its end)
host = np.zeros(16, np.uint8)
for name, args, code in [("cuMemcpyHtoD_v2", (p, host.ctypes.data, 16), IMPLICIT),
                         ("cuMemcpyDtoH_v2", (host.ctypes.data, p, 16), IMPLICIT),
                         ("cuMemsetD8_v2", (p, 0, 16), IMPLICIT),
                         ("cuStreamSynchronize", (s,), UNSUPPORTED),
                         ("cuStreamQuery", (s,), UNSUPPORTED),
                         ("cuCtxSynchronize", (), UNSUPPORTED),
                         ("cuMemFree_v2", (q,), UNSUPPORTED),
                         ("cuMemcpyHtoDAsync_v2", (p, host.ctypes.data, 16, s), UNSUPPORTED)]:   # pageable
    ok("cuStreamBeginCapture_v2", s, 0)
    assert rc(name, *args) == code, name
    ok("cuStreamIsCapturing", s, byref(st)); assert st.value == 2, name     # INVALIDATED
    g2 = c_void_p(1)
    assert rc("cuStreamEndCapture", s, byref(g2)) == INVALIDATED and not g2.value, name
assert rc("cuStreamEndCapture", s, byref(g2)) == ILLEGAL_STATE       # no capture under way
ev = c_void_p(); ok("cuEventCreate", byref(ev), 0); ok("cuEventRecord", ev, None)
ok("cuStreamBeginCapture_v2", s, 0)
assert rc("cuStreamWaitEvent", s, ev, 0) == ISOLATION                 # an event from outside the capture
assert rc("cuStreamEndCapture", s, byref(g2)) == INVALIDATED
ok("cuCtxSynchronize"); ok("cuMemFree_v2", q)
assert (raw[:16] == 9).all()                                          # nothing of the failed captures ran
ok("cuGraphExecDestroy", e); ok("cuGraphDestroy", g)
assert rc("cuGraphLaunch", e, s) == 1 and rc("cuGraphExecDestroy", e) == 1      # stale handles
ok("cuMemFreeHost", pinned)
print("ok")
'''


def test_graph_api():
    assert fakecuda.run_python(GRAPH_API).strip().endswith("ok")


GRAPH_KERNELS = r'''
import numpy as np
import fakecuda
lib = fakecuda.install()
x = tgrad.arange(8, dtype=tgrad.float32, device="cuda")
g = tgrad.cuda.CUDAGraph()
launches, jobs = lib.fakecuda_launch_count(), len(fakecuda.JOBS)
with tgrad.cuda.graph(g):
    y = (x * 2.5 + 1).relu()                   # the scalars are staged in pinned memory the graph keeps
n = lib.fakecuda_launch_count() - launches
assert n >= 2 and len(fakecuda.JOBS) == jobs + n, (n, len(fakecuda.JOBS))   # kept as graph nodes
for k in range(3):
    x.copy_(tgrad.full((8,), float(k), device="cuda"))
    before = lib.fakecuda_launch_count()
    g.replay()
    assert lib.fakecuda_launch_count() == before                      # a replay: no kernel launched one by one
    np.testing.assert_array_equal(y.cpu().numpy(), np.maximum(np.full(8, k, np.float32) * 2.5 + 1, 0))
g.reset()
assert len(fakecuda.JOBS) == jobs                                     # the graph's jobs went with it
try:
    with tgrad.cuda.graph(tgrad.cuda.CUDAGraph()):
        (x * 2).sum().item()
    raise SystemExit("no error")
except RuntimeError as e:
    assert "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT" in str(e), e
assert not fakecuda.ERRORS, fakecuda.ERRORS
print("ok")
'''


@pytest.mark.parametrize("cc", [80, 90])
def test_graph_capture_and_replay_of_tgrad_kernels(cc):
    assert fakecuda.run_python(GRAPH_KERNELS, cc=cc).strip().endswith("ok")
