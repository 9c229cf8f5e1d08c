"""Every example runs with --fast in a fresh interpreter and asserts its own result (exit status 0)."""
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(name, *args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"
    return r


def test_seeds():
    out = _run("seeds.py").stdout
    n = sum(line.startswith("---- seed ") for line in out.splitlines())
    assert n > 40 and out.endswith(f"all {n} cells match their seeds\n")
    assert "tensor([1.0235], requires_grad=True) tensor([1.9690], requires_grad=True)\n" in out   # seed 003's fit


def test_linear_regression():
    out = _run("linear_regression.py", "--fast").stdout
    assert "least squares: b = 1.0235, w = 1.9690" in out
    hand, sgd = [line.split(":", 1)[1] for line in out.splitlines()[:2]]
    assert hand.strip() == sgd.strip()


def test_train_mlp(tmp_path):
    pytest.importorskip("sklearn")
    r = _run("train_mlp.py", "--fast", "--out", str(tmp_path))
    out = r.stdout
    assert "epoch 1/3:" in r.stderr and "epoch 3/3: 100%" in r.stderr     # the tqdm bar, stderr not a terminal
    lines = [line for line in out.splitlines() if line.startswith("epoch")]
    assert len(lines) == 3 and "held-out accuracy" in lines[-1]
    assert (tmp_path / "train_mlp_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "train_mlp.safetensors").stat().st_size > 30_000
    assert "reloaded model: held-out accuracy" in out


def test_freeze_layers():
    pytest.importorskip("sklearn")
    out = _run("freeze_layers.py", "--fast").stdout
    assert "frozen body: bit-for-bit unchanged, no gradients, no optimizer state" in out


def test_train_ddp(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("mpi4py", reason='pip install "tgrad[distributed]"')
    out = _run("train_ddp.py", "--fast", "--out", str(tmp_path)).stdout
    lines = [line for line in out.splitlines() if line.startswith("epoch")]
    assert len(lines) == 3 and "held-out accuracy" in lines[-1]      # printed by rank 0 only
    assert "2 ranks, 719 training samples and 23 steps per rank and epoch" in out
    assert "replicas identical" in out and (tmp_path / "train_ddp.safetensors").stat().st_size > 30_000


def test_train_cnn(tmp_path):
    pytest.importorskip("sklearn")
    r = _run("train_cnn.py", "--fast", "--out", str(tmp_path))
    out = r.stdout
    assert "epoch 3/3: 100%" in r.stderr
    lines = [line for line in out.splitlines() if line.startswith("epoch")]
    assert len(lines) == 3 and "held-out accuracy" in lines[-1]
    assert "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))" in out
    assert "tgrad: mean training step" in out
    assert (tmp_path / "train_cnn_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_gpt():
    out = _run("train_gpt.py", "--fast").stdout
    first, last = (line for line in out.splitlines() if "val loss" in line)
    start = float(first.split("train loss ")[1].split(",")[0])
    assert abs(start - math.log(92)) < 0.15 and last.startswith("step 30: train loss")    # 92 characters
    assert float(last.split("train loss ")[1].split(",")[0]) < start - 0.5
    assert "mean step time:" in out and "--- sample (" in out
