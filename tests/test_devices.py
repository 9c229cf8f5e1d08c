"""Devices: parsing and printing like torch.device, the default device, and cuda without a GPU."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tgrad

ROOT = str(Path(__file__).resolve().parents[1])
no_gpu = pytest.mark.skipif(tgrad.cuda.is_available(), reason="checks the behaviour without a GPU")


def run_py(code, **env):
    """Run ``code`` in a fresh interpreter with tgrad importable; returns stdout (raises on failure)."""
    e = {k: v for k, v in os.environ.items() if k != "TGRAD_DEVICE"}
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env)
    r = subprocess.run([sys.executable, "-c", code], env=e, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture
def restore_default_device():
    prev = tgrad.get_default_device()
    yield
    tgrad.set_default_device(prev)


@pytest.mark.parametrize("spec,type_,index,text,rep", [
    ("cpu", "cpu", None, "cpu", "device(type='cpu')"),
    ("cuda", "cuda", None, "cuda", "device(type='cuda')"),
    ("cuda:1", "cuda", 1, "cuda:1", "device(type='cuda', index=1)"),
    ("cuda:12", "cuda", 12, "cuda:12", "device(type='cuda', index=12)"),
    ("cpu:0", "cpu", 0, "cpu:0", "device(type='cpu', index=0)"),
])
def test_parse_and_print(spec, type_, index, text, rep):
    d = tgrad.device(spec)
    assert (d.type, d.index, str(d), repr(d)) == (type_, index, text, rep)
    assert tgrad.device(d) == d and tgrad.device(text) == d


def test_type_and_index_arguments():
    assert tgrad.device("cuda", 1) == tgrad.device("cuda:1")
    assert repr(tgrad.device("cuda", 0)) == "device(type='cuda', index=0)"
    assert tgrad.device(2) == tgrad.device("cuda:2")          # an int means a cuda ordinal


def test_equality_and_hash():
    assert tgrad.device("cuda:0") != tgrad.device("cuda")      # like torch: the index is part of identity
    assert tgrad.device("cuda:0") != tgrad.device("cuda:1")
    assert tgrad.device("cpu") != tgrad.device("cuda")
    assert {tgrad.device("cpu"): 1}[tgrad.device("cpu")] == 1
    assert len({tgrad.device("cuda:1"), tgrad.device("cuda", 1)}) == 1


@pytest.mark.parametrize("spec,message", [
    ("gpu", "Expected one of cpu, cuda, meta device type at start of device string: gpu"),
    ("CUDA", "Expected one of cpu, cuda, meta device type at start of device string: CUDA"),
    ("cuda:x", "Invalid device string: 'cuda:x'"),
    ("cuda:-1", "Invalid device string: 'cuda:-1'"),
    ("cuda:01", "Invalid device string: 'cuda:01'"),
    ("cuda:1:2", "Invalid device string: 'cuda:1:2'"),
    ("cuda: 1", "Invalid device string: 'cuda: 1'"),
    ("cuda:", "Invalid device string: 'cuda:'"),
    ("", "Device string must not be empty"),
])
def test_bad_device_strings(spec, message):
    with pytest.raises(RuntimeError) as e:
        tgrad.device(spec)
    assert str(e.value) == message


def test_bad_device_arguments():
    with pytest.raises(RuntimeError, match="must not be negative"):
        tgrad.device("cuda", -1)
    with pytest.raises(RuntimeError, match="must not include an index because index was passed explicitly"):
        tgrad.device("cuda:1", 1)
    for bad in (1.5, None, [0]):
        with pytest.raises(TypeError):
            tgrad.device(bad)
    with pytest.raises(RuntimeError, match="unknown|Expected one of"):
        tgrad.zeros(2, device="tpu")


def test_tensor_device(device):
    x = tgrad.ones(2, 3, device=device)
    assert x.device.type == device and x.is_cpu == (device == "cpu") and x.is_cuda == (device == "cuda")
    assert tgrad.ones(2, device=x.device).device == x.device


@no_gpu
def test_cuda_unavailable_here():
    assert tgrad.cuda.is_available() is False
    assert tgrad.cuda.device_count() == 0
    tgrad.cuda.empty_cache()                                   # a no-op, like torch without a GPU


@no_gpu
@pytest.mark.parametrize("make", [
    lambda: tgrad.zeros(2, device="cuda"),
    lambda: tgrad.tensor([1.0], device="cuda:0"),
    lambda: tgrad.ones(2).cuda(),
    lambda: tgrad.ones(2).to("cuda"),
    lambda: tgrad.cuda.synchronize(),
    lambda: tgrad.cuda.memory_allocated(),
], ids=["zeros", "tensor", "cuda()", "to", "synchronize", "memory_allocated"])
def test_asking_for_cuda_without_gpu_says_why(make):
    with pytest.raises(RuntimeError) as e:
        make()
    msg = str(e.value)
    assert "cuda is not available" in msg
    assert "no CUDA driver" in msg or "no CUDA device" in msg, msg


def test_set_default_device(restore_default_device):
    tgrad.set_default_device("cpu")
    assert tgrad.get_default_device() == tgrad.device("cpu")
    assert tgrad.zeros(2).device == tgrad.device("cpu")
    assert tgrad.arange(3).device.type == "cpu" and tgrad.randn(2).device.type == "cpu"
    tgrad.set_default_device(tgrad.device("cpu"))
    assert tgrad.ones(1).device.type == "cpu"
    with pytest.raises(RuntimeError):
        tgrad.set_default_device("gpu")


@no_gpu
def test_default_device_cuda_without_gpu_fails_clearly_on_use(restore_default_device):
    tgrad.set_default_device("cuda")
    with pytest.raises(RuntimeError, match="cuda is not available"):
        tgrad.zeros(2)


@no_gpu
def test_default_device_is_cpu_without_gpu():
    assert run_py("import tgrad; print(tgrad.get_default_device(), tgrad.zeros(1).device)") == "cpu cpu"


def test_tgrad_device_environment_variable():
    assert run_py("import tgrad; print(tgrad.get_default_device(), tgrad.ones(2).device)",
                  TGRAD_DEVICE="cpu") == "cpu cpu"
    out = run_py("import tgrad\n"
                 "try:\n    tgrad.zeros(1)\nexcept RuntimeError as e:\n    print(e)",
                 TGRAD_DEVICE="gpu")
    assert "Expected one of cpu, cuda, meta device type" in out
    # set_default_device overrides the variable
    assert run_py("import tgrad; tgrad.set_default_device('cpu'); print(tgrad.zeros(1).device)",
                  TGRAD_DEVICE="cuda") == "cpu"


@no_gpu
def test_tgrad_device_cuda_without_gpu():
    out = run_py("import tgrad\n"
                 "try:\n    tgrad.zeros(1)\nexcept RuntimeError as e:\n    print(e)",
                 TGRAD_DEVICE="cuda")
    assert out.startswith("cuda is not available: no CUDA driver") or "no CUDA device" in out, out
