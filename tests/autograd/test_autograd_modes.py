"""Grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode), anomaly mode, threads."""
import re
import threading

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function


def _np(t):
    return t.detach()._host_copy()


# ------------------------------------------------------------------ grad modes
def test_no_grad_and_enable_grad_as_context_managers():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.no_grad():
        assert not tgrad.is_grad_enabled()
        y = x * 2
        with tgrad.enable_grad():
            z = x * 2
        assert not tgrad.is_grad_enabled()
    assert tgrad.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad and z.grad_fn.name() == "MulBackward0"


def test_modes_as_decorators():
    @tgrad.no_grad()
    def f():
        return tgrad.is_grad_enabled()

    @tgrad.no_grad
    def f_bare():
        return tgrad.is_grad_enabled()

    @tgrad.enable_grad
    def g():
        return tgrad.is_grad_enabled()

    @tgrad.set_grad_enabled(False)
    def h():
        return tgrad.is_grad_enabled()

    @tgrad.inference_mode
    def k():
        return tgrad.is_inference_mode_enabled()

    @tgrad.inference_mode(False)
    def k2():
        return tgrad.is_inference_mode_enabled()

    @tgrad.no_grad()
    def gen():
        yield tgrad.is_grad_enabled()
        yield tgrad.is_grad_enabled()

    assert tgrad.is_grad_enabled()              # decorating set_grad_enabled(False) restored the mode
    assert (f(), f_bare(), h(), k(), k2()) == (False, False, False, True, False)
    with tgrad.no_grad():
        assert g() is True
    assert list(gen()) == [False, False] and tgrad.is_grad_enabled()
    assert f.__name__ == "f"


def test_set_grad_enabled_as_function_and_context_manager():
    try:
        tgrad.set_grad_enabled(False)
        assert not tgrad.is_grad_enabled()
    finally:
        tgrad.set_grad_enabled(True)
    with tgrad.set_grad_enabled(False):
        assert not tgrad.is_grad_enabled()
    assert tgrad.is_grad_enabled()
    assert tgrad.autograd.set_grad_enabled is tgrad.set_grad_enabled


def test_with_no_grad_without_parentheses_fails_like_pytorch():
    with pytest.raises(TypeError):
        with tgrad.no_grad:      # seed 004 writes this; Python rejects a class as context manager
            pass


def test_inference_mode():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.inference_mode():
        assert tgrad.is_inference_mode_enabled() and not tgrad.is_grad_enabled()
        it = tgrad.ones(2)
        with tgrad.enable_grad():
            assert not (x * 2).requires_grad       # nothing records in inference mode
        with tgrad.inference_mode(False):
            assert not tgrad.is_inference_mode_enabled() and tgrad.is_grad_enabled()
            assert not tgrad.ones(2).is_inference()
    assert it.is_inference() and not x.is_inference() and not tgrad.is_inference_mode_enabled()
    assert it[0].is_inference()
    (it + x).sum().backward()                      # add saves nothing: allowed
    with pytest.raises(RuntimeError, match=re.escape(
            "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
            "mode in computation tracked by autograd. To work around this, you can make a clone to get a normal "
            "tensor and use it in autograd, or use `tgrad.no_grad()` instead of `tgrad.inference_mode()`.")):
        it * x
    with pytest.raises(RuntimeError, match=re.escape(
            "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")):
        it.requires_grad_()
    c = it.clone()
    assert not c.is_inference()
    (c * x).sum().backward()


def test_grad_mode_is_thread_local():
    seen = []
    with tgrad.no_grad():
        t = threading.Thread(target=lambda: seen.append(tgrad.is_grad_enabled()))
        t.start()
        t.join()
    with tgrad.inference_mode():
        t = threading.Thread(target=lambda: seen.append((tgrad.is_inference_mode_enabled(),
                                                          (tgrad.ones(1, requires_grad=True) * 2).requires_grad)))
        t.start()
        t.join()
    with tgrad.autograd.set_detect_anomaly(True):
        t = threading.Thread(target=lambda: seen.append(tgrad.is_anomaly_enabled()))
        t.start()
        t.join()
    with tgrad.autograd.graph.saved_tensors_hooks(lambda t: 1 / 0, lambda p: p):     # a pack that would raise
        x = tgrad.ones(2, requires_grad=True)
        t = threading.Thread(target=lambda: seen.append((x * x).grad_fn._saved_self is x))
        t.start()
        t.join()
    assert seen == [True, (False, True), False, True]


# ------------------------------------------------------------------ anomaly mode
class Boom(Function):
    @staticmethod
    def forward(ctx, i):
        return i * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom")


def test_detect_anomaly_reports_where_the_failing_node_was_made():
    x = tgrad.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with tgrad.autograd.detect_anomaly():
            assert tgrad.is_anomaly_enabled()
            y = Boom.apply(x)                             # the line the report must show
            with pytest.warns(UserWarning) as rec:
                with pytest.raises(ValueError, match="boom"):
                    y.sum().backward()
    assert not tgrad.is_anomaly_enabled()
    msgs = [str(w.message) for w in rec if "Error detected" in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("Error detected in BoomBackward. Traceback of forward call that caused the error:\n")
    assert __file__ in msgs[0] and "y = Boom.apply(x)" in msgs[0]
    assert "dispatch.py" not in msgs[0] and "function.py" not in msgs[0]


def test_anomaly_nan_check_names_the_node():
    x = tgrad.zeros(2, requires_grad=True)
    with tgrad.autograd.set_detect_anomaly(True):
        y = (x * 0).pow(0.5)                  # pow's backward gives inf at 0, times 0 -> nan in MulBackward0
        with pytest.warns(UserWarning, match="Error detected in MulBackward0"):
            with pytest.raises(RuntimeError, match=re.escape(
                    "Function 'MulBackward0' returned nan values in its 0th output.")):
                y.sum().backward()
    with tgrad.autograd.set_detect_anomaly(True, check_nan=False):
        assert not tgrad.is_anomaly_check_nan_enabled()
        (x * 0).pow(0.5).sum().backward()
    assert np.isnan(_np(x.grad)).all()
    assert not tgrad.is_anomaly_enabled() and tgrad.is_anomaly_check_nan_enabled()
    x.grad = None
    (x * 0).pow(0.5).sum().backward()         # anomaly mode off: no check
    assert np.isnan(_np(x.grad)).all()


def test_set_detect_anomaly_applies_immediately_and_decorator():
    prev = tgrad.autograd.set_detect_anomaly(True)
    try:
        assert tgrad.is_anomaly_enabled()
    finally:
        prev.__exit__(None, None, None)
    assert not tgrad.is_anomaly_enabled()

    @tgrad.autograd.detect_anomaly()
    def f():
        return tgrad.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        assert f()


# ------------------------------------------------------------------ threads
def test_ten_threads_independent_graphs_seed001():
    results = [None] * 10

    def train_fn(i):
        x = tgrad.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()
        results[i] = _np(x.grad)

    threads = [threading.Thread(target=train_fn, args=(i,)) for i in range(10)]
    for p in threads:
        p.start()
    for p in threads:
        p.join()
    for r in results:
        np.testing.assert_array_equal(r, np.full((5, 5), 4.5, dtype=np.float32))


def test_concurrent_backward_into_a_shared_leaf_is_exact():
    w = tgrad.zeros(3, requires_grad=True)
    errors = []

    def worker(k):
        try:
            for _ in range(5):
                (w * tgrad.full((3,), float(k))).sum().backward()
        except Exception as e:        # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(_np(w.grad), [5 * 36.0] * 3)     # 5 * (1 + ... + 8)


def test_anomaly_trace_of_an_op_ends_at_the_users_line():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.autograd.set_detect_anomaly(True):
        y = tgrad.pow(x, 2)                       # through tgrad._functional and Tensor.pow
    trace = y.grad_fn._anomaly_trace
    assert trace.rstrip().endswith("y = tgrad.pow(x, 2)                       # through tgrad._functional and Tensor.pow")
    assert (x * 2).grad_fn._anomaly_trace is None
