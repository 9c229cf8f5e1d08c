"""tgrad never imports torch: not itself, and not through Triton (which probes for it).

A stub ``torch`` package is put first on the path of a fresh interpreter, so
any attempt to import torch succeeds and shows in ``sys.modules`` even on a
machine where torch is not installed.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys
    import tgrad
    from tgrad.kernels.runtime import launcher as T
    from tgrad.kernels import elementwise as KE

    tgrad.manual_seed(0)
    x = tgrad.randn(8, 3)
    w = tgrad.randn(3, requires_grad=True)
    b = tgrad.zeros(1, requires_grad=True)
    for step in range(2):                       # a training step by hand: forward, backward, SGD update
        loss = ((x * w + b - 1.0) ** 2).mean()
        loss.backward()
        with tgrad.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
    y = (x.to(tgrad.bfloat16).float() / 3).exp().sum(0)
    print(loss.item() > 0, tuple(y.shape), tgrad.memory_allocated() > 0)
    sig, cexpr, attrs = T.launch_spec(KE.fill_kernel, [KE.kptr(x), 24, 1.0] + [1] * 5 + [0] * 6,
                                      {"O_ND": 0, "COMPUTE": KE.compute_type(x.dtype), "BLOCK": 1024})
    T.compile_aot(KE.fill_kernel, sig, cexpr, 90, attrs)
    print("torch" in sys.modules, sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchvision")))
""")


def test_torch_never_imported(tmp_path):
    stub = tmp_path / "torch"
    stub.mkdir()
    (stub / "__init__.py").write_text("__version__ = '0.0.0-stub'\n")
    # (without the test suite's fake CUDA driver: its kernels run only in the process that installed it)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_DEFAULT_BACKEND", "TGRAD_DEVICE", "TRITON_LIBCUDA_PATH")
           and not k.startswith("FAKECUDA_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "True (3,) True"
    assert lines[-1] == "False []", f"torch was imported: {lines[-1]}"


def test_stub_is_visible(tmp_path):
    """The check above can fail: the stub does show up when something imports torch."""
    stub = tmp_path / "torch"
    stub.mkdir()
    (stub / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", "import sys, torch; print('torch' in sys.modules)"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "True", r.stderr
