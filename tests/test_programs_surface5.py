"""Surface that programs of /tmp/progs8 hit: ``torch._dynamo.reset``/``config``, ``torch.compiler``."""
import sys
import warnings

import numpy as np
import pytest

import tgrad

CPU_ONLY = True


def test_dynamo_reset_records_again_and_is_compiling():
    def f(a):
        return a * 2 + 1
    runs = []       # (counted by a profiler: what the step reads is part of its guard key)

    def prof(frame, event, arg):
        if event == "call" and frame.f_code is f.__code__:
            runs.append(tgrad.compiler.is_compiling())
    g = tgrad.compile(f)
    x = tgrad.arange(4.0)

    def calls(n):
        sys.setprofile(prof)
        try:
            for _ in range(n):
                np.testing.assert_array_equal(g(x).numpy(), np.arange(4.0) * 2 + 1)
        finally:
            sys.setprofile(None)
        return len(runs)
    assert calls(4) == 2 and all(runs)       # Python runs at warm-up and recording, not at replay
    tgrad._dynamo.reset()
    assert calls(2) == 4
    assert not tgrad.compiler.is_compiling() and not tgrad._dynamo.is_compiling()
    tgrad.compiler.reset()
    assert calls(1) == 5


def test_dynamo_config_cache_size_limit():
    f = tgrad.compile(lambda a: a + 1)
    old = tgrad._dynamo.config.cache_size_limit
    assert old == 8
    tgrad._dynamo.config.cache_size_limit = 1
    try:
        f(tgrad.ones(2))
        with pytest.warns(UserWarning, match=r"cache_size_limit \(1\)"):
            f(tgrad.ones(3))
    finally:
        tgrad._dynamo.config.cache_size_limit = old
    assert tgrad.compiler.config is tgrad._dynamo.config


def test_compiler_disable_returns_the_function():
    def g(a):
        return a - 1
    assert tgrad.compiler.disable(g) is g
    assert tgrad._dynamo.disable(recursive=False)(g) is g
    assert tgrad.compiler.allow_in_graph(g) is g
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tgrad._dynamo.mark_dynamic(tgrad.ones(2), 0)


def test_layer_norm_bf16_input_float_params_grads_as_aten():
    """A bf16 input with float32 weight/bias (autocast on cpu): ATen sums dw, db in per-thread bf16 buffers, then
    adds the buffers in float32 (tests/data/layer_norm_bf16_params.py)."""
    import json
    import os
    with open(os.path.join(os.path.dirname(__file__), "data", "layer_norm_bf16_params.json")) as f:
        want = json.load(f)
    M, K = 13, 20
    x = (tgrad.arange(M * K, dtype=tgrad.float32).reshape(M, K) * 0.37).sin().mul(3).add(0.5).bfloat16()
    dy = (tgrad.arange(M * K, dtype=tgrad.float32).reshape(M, K) * 0.91).cos().bfloat16()
    old = tgrad.get_num_threads()
    try:
        for threads in (1, 2):
            tgrad.set_num_threads(threads)
            w = tgrad.linspace(0.5, 1.5, K).requires_grad_()
            b = tgrad.linspace(-1, 1, K).requires_grad_()
            tgrad.nn.functional.layer_norm(x, (K,), w, b).backward(dy)
            assert w.grad.dtype == tgrad.float32 and b.grad.dtype == tgrad.float32
            np.testing.assert_array_equal(w.grad.numpy(), np.float32(want[str(threads)]["dw"]), err_msg=str(threads))
            np.testing.assert_array_equal(b.grad.numpy(), np.float32(want[str(threads)]["db"]), err_msg=str(threads))
    finally:
        tgrad.set_num_threads(old)


def _ties_data():
    import json
    import os
    with open(os.path.join(os.path.dirname(__file__), "data", "topk_ties.json")) as f:
        return json.load(f)


def _tied_rows():
    x = ((tgrad.arange(6 * 40) * 7 + 3) % 5).float().reshape(6, 40)
    x[2, 5] = x[2, 17] = float("nan")
    x[3, 11] = float("nan")
    return x


def test_topk_ties_in_aten_order():
    """Which of equal elements topk returns, and in what order: ATen's (tests/data/topk_ties.py)."""
    want, x = _ties_data(), _tied_rows()
    r = x.topk(5)
    assert r.indices.tolist() == want["top5"]
    np.testing.assert_array_equal(r.values.numpy(), np.take_along_axis(x.numpy(), r.indices.numpy(), 1))
    assert x.topk(3, largest=False, sorted=False).indices.tolist() == want["bottom3_unsorted"]
    assert x.topk(4, dim=0).indices.tolist() == want["top7_dim0"]
    wide = ((tgrad.arange(2 * 130) * 11) % 4).reshape(2, 130)
    assert tgrad.topk(wide, 2).indices.tolist() == want["wide_top2"]
    g = tgrad.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    g.topk(2).values.sum().backward()
    assert g.grad.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_kthvalue_ties_in_aten_order():
    want, x = _ties_data(), _tied_rows()
    assert [x.kthvalue(k).indices.tolist() for k in (1, 9, 20, 40)] == want["kth"]
    r = x.kthvalue(3, dim=0, keepdim=True)
    assert r.indices.squeeze(0).tolist() == want["kth_dim0"] and r.values.shape == (1, 40)
    np.testing.assert_array_equal(r.values.numpy(), np.take_along_axis(x.numpy(), r.indices.numpy(), 0))


def test_sort_unstable_and_mode_ties_in_aten_order():
    """sort(stable=False) is std::sort on ATen's cpu, mode takes the end of its run after std::sort."""
    want, x = _ties_data(), _tied_rows()
    assert x.sort(1).indices.tolist() == want["sort"]
    s = x.sort(0, descending=True)
    assert s.indices.tolist() == want["sort_desc_dim0"]
    np.testing.assert_array_equal(s.values.numpy(), np.take_along_axis(x.numpy(), s.indices.numpy(), 0))
    assert x.sort(1, stable=True).indices.tolist() == np.argsort(x.numpy(), 1, kind="stable").tolist()
    wide = ((tgrad.arange(2 * 130) * 11) % 4).reshape(2, 130)
    assert wide.argsort(1).tolist() == want["argsort_wide"]
    m = x.mode(1)
    np.testing.assert_array_equal(m.values.numpy(), np.float32(want["mode"][0]))
    assert m.indices.tolist() == want["mode"][1]
    assert x.mode(0).indices.tolist() == want["mode_dim0"]


def test_persistent_workers_left_running_do_not_hang_exit():
    """An iterator of persistent workers still alive at exit (one worker never got a task): the interpreter exits
    (its shutdown used to wait on the done event's lock, held by a worker multiprocessing had terminated)."""
    import os
    import subprocess
    prog = ("import tgrad\nfrom tgrad.utils.data import DataLoader, TensorDataset\n"
            "dl = DataLoader(TensorDataset(tgrad.arange(6.0), tgrad.arange(6)), batch_size=4, num_workers=2,\n"
            "                drop_last=True, persistent_workers=True)\n"
            "print([b[1].tolist() for b in dl])\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.strip() == "[[0, 1, 2, 3]]"
