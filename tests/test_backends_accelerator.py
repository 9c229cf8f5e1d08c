"""What real programs touch first: tgrad.accelerator, tgrad.backends as a package, Tensor.is_xpu & co,
CosineAnnealingWarmRestarts (values printed by PyTorch 2.13 for the same schedule)."""
import subprocess
import sys

import pytest

import tgrad


def test_backends_is_a_package_with_pytorchs_namespaces():
    r = subprocess.run([sys.executable, "-c", "import tgrad.backends.cudnn, tgrad.backends.cuda, tgrad.backends.mps;"
                        "import tgrad.backends.cpu; print(tgrad.backends.cudnn.is_available(),"
                        "tgrad.backends.mps.is_available(), tgrad.backends.cuda.matmul.allow_tf32)"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["False", "False", "False"], r.stderr
    tgrad.backends.cudnn.benchmark = True           # programs set these; they are plain attributes
    tgrad.backends.cudnn.deterministic = True
    assert tgrad.backends.cuda.is_built() and tgrad.backends.cpu.get_cpu_capability() == "DEFAULT"


def test_accelerator_follows_cuda():
    assert tgrad.accelerator.is_available() == tgrad.cuda.is_available()
    acc = tgrad.accelerator.current_accelerator()
    if tgrad.cuda.is_available():
        assert acc == tgrad.device("cuda") and tgrad.accelerator.device_count() == tgrad.cuda.device_count()
    else:
        assert acc is None and tgrad.accelerator.device_count() == 0
    # the official examples' idiom
    device = acc if tgrad.accelerator.is_available() else tgrad.device("cpu")
    assert tgrad.ones(2, device=device).sum().item() == 2.0


def test_other_device_predicates_are_false(device):
    t = tgrad.ones(2, device=device)
    assert not (t.is_xpu or t.is_mps or t.is_meta or t.is_mkldnn)


def test_cosine_annealing_warm_restarts_matches_pytorch():
    p = tgrad.nn.Parameter(tgrad.zeros(1))
    opt = tgrad.optim.SGD([p], lr=0.1)
    s = tgrad.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01)
    got = []
    for _ in range(12):
        opt.step()
        s.step()
        got.append(s.get_last_lr()[0])
    s.step(7.5)
    got.append(s.get_last_lr()[0])
    # torch.optim.lr_scheduler.CosineAnnealingWarmRestarts, same calls, PyTorch 2.13
    want = [0.0775, 0.032500000000000015, 0.1, 0.09397114317029975, 0.0775, 0.05500000000000001,
            0.032500000000000015, 0.01602885682970026, 0.1, 0.09846666218300808, 0.09397114317029975,
            0.08681980515339464, 0.023180194846605363]
    assert got == want
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        tgrad.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        tgrad.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
