"""Fewer launches per backward (issue #6): AccumulateGrad steals the gradient instead of cloning it."""
import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function


def _np(t):
    return t.detach()._host_copy()


def leaf(values, dtype=tgrad.float32):
    return tgrad.tensor(values, dtype=dtype, requires_grad=True)


# ------------------------------------------------------------------ 1. AccumulateGrad steals
def test_fresh_leaf_gets_the_gradient_without_a_clone():
    a = leaf([1.0, 2.0, 3.0])
    w = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = (a * 2).sum() + tgrad.mm(w, a.reshape(3, 1)).sum()
    with tgrad.profiler.profile() as prof:
        y.backward()
    assert "clone" not in prof.launches_by_op and "clone_kernel" not in prof.launches_by_kernel
    np.testing.assert_array_equal(_np(a.grad), [7.0, 9.0, 11.0])
    np.testing.assert_array_equal(_np(w.grad), [[1, 2, 3], [1, 2, 3]])
    assert not a.grad.requires_grad and a.grad.grad_fn is None and a.grad._base is None
    # the second backward accumulates in place (no new tensor)
    g = a.grad
    (a * 2).sum().backward()
    assert a.grad is g
    np.testing.assert_array_equal(_np(a.grad), [9.0, 11.0, 13.0])


def test_one_gradient_reaching_two_leaves_gives_each_its_own():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    ((a + b) * 1.0).sum().backward()      # AddBackward0 passes one (fresh) tensor to both AccumulateGrads
    assert a.grad.untyped_storage() is not b.grad.untyped_storage()
    a.grad.add_(1)
    np.testing.assert_array_equal(_np(a.grad), [2.0, 2.0])
    np.testing.assert_array_equal(_np(b.grad), [1.0, 1.0])
    ((a + b) * 1.0).sum().backward()
    np.testing.assert_array_equal(_np(a.grad), [3.0, 3.0])
    np.testing.assert_array_equal(_np(b.grad), [2.0, 2.0])


def test_hook_that_keeps_the_gradient_sees_it_unchanged():
    # PyTorch: the saved tensor is not .grad (cloned), later accumulation does not change it
    a = leaf([1.0, 2.0, 3.0])
    saved = []
    a.register_hook(lambda g: saved.append(g))
    (a * 2).sum().backward()
    assert saved[0] is not a.grad and saved[0].untyped_storage() is not a.grad.untyped_storage()
    (a * 2).sum().backward()
    np.testing.assert_array_equal(_np(saved[0]), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(_np(a.grad), [4.0, 4.0, 4.0])


def test_hook_returning_a_kept_tensor_is_not_stolen():
    a = leaf([1.0, 2.0])
    kept = []

    def hook(g):
        kept.append(g * 3)
        return kept[-1]
    a.register_hook(hook)
    (a * 1).sum().backward()
    (a * 1).sum().backward()
    np.testing.assert_array_equal(_np(kept[0]), [3.0, 3.0])
    np.testing.assert_array_equal(_np(a.grad), [6.0, 6.0])


def test_user_grad_output_is_not_stolen():
    a = leaf([1.0, 2.0])
    g = tgrad.tensor([1.0, 1.0])
    a.backward(g)                        # a leaf root: its AccumulateGrad gets g itself
    b = leaf([0.0, 0.0])
    (b + 0).backward(g)                  # AddBackward0 passes g through
    a.grad.add_(5)
    b.grad.add_(5)
    np.testing.assert_array_equal(_np(g), [1.0, 1.0])


def test_retain_graph_node_returning_a_saved_tensor():
    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            w = tgrad.tensor([1.0, 10.0])
            ctx.save_for_backward(w)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            return w                     # the saved tensor itself, again on every backward

    x = leaf([0.0, 0.0])
    y = Keep.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(_np(x.grad), [3.0, 30.0])


def test_gradient_sharing_storage_with_a_saved_output_is_not_stolen():
    class Out(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.save_for_backward(y)    # an output: stored as an alias of y's storage
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return y.detach()            # a new tensor object on y's storage

    x = leaf([1.0, 2.0])
    y = Out.apply(x)
    y.sum().backward()
    x.grad.add_(100)
    np.testing.assert_array_equal(_np(y), [2.0, 4.0])
    np.testing.assert_array_equal(_np(x.grad), [102.0, 104.0])


def test_expanded_gradient_does_not_become_grad():
    a = leaf(np.zeros((3, 4)))
    a.sum().backward()                    # SumBackward0: the gradient is an expand of a scalar
    assert a.grad.stride() == (4, 1)
    a.grad.add_(tgrad.arange(12, dtype=tgrad.float32).reshape(3, 4))
    np.testing.assert_array_equal(_np(a.grad), 1 + np.arange(12).reshape(3, 4))
    b = leaf([1.0, 2.0, 3.0])
    (b * tgrad.tensor([[1.0], [2.0]])).sum().backward()   # broadcast: reduced by sum_to_size
    np.testing.assert_array_equal(_np(b.grad), [3.0, 3.0, 3.0])
    assert b.grad.stride() == (1,)


def test_gradient_with_other_strides_is_cloned():
    class Strided(Function):
        """backward returns a fresh tensor (not a view, its storage its own) with the given geometry."""
        @staticmethod
        def forward(ctx, x, make):
            ctx.make = make
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ctx.make(), None

    w = leaf(np.zeros((2, 3)))
    Strided.apply(w, lambda: tgrad.ones(3, 2).t().detach()).sum().backward()     # strides (1, 2)
    assert w.grad.stride() == (3, 1)
    np.testing.assert_array_equal(_np(w.grad), np.ones((2, 3)))
    r = leaf(np.zeros((1, 3)))
    Strided.apply(r, lambda: tgrad.ones(3).expand(1, 3).detach()).sum().backward()  # (0, 1): a 0-stride dim
    assert r.grad.stride() == (3, 1)
    r.grad.add_(tgrad.tensor([[1.0, 2.0, 3.0]]))
    np.testing.assert_array_equal(_np(r.grad), [[2.0, 3.0, 4.0]])
    v = leaf(np.zeros((2, 3)))
    Strided.apply(v, lambda: tgrad.ones(2, 3) * 1).sum().backward()                 # obeys: stolen
    assert v.grad.stride() == (3, 1)
    g = leaf(np.zeros((2, 3)))
    (g.t() * 1).sum().backward()          # the gradient arrives as a transposed view
    assert g.grad._base is None
    np.testing.assert_array_equal(_np(g.grad), np.ones((2, 3)))


def test_autograd_grad_does_not_touch_grad_and_returns_its_own():
    a = leaf([1.0, 2.0])
    (ga,) = tgrad.autograd.grad((a * 3).sum(), a)
    assert a.grad is None
    np.testing.assert_array_equal(_np(ga), [3.0, 3.0])
    (a * 3).sum().backward(inputs=[a])
    np.testing.assert_array_equal(_np(a.grad), [3.0, 3.0])


def test_create_graph_keeps_the_recorded_copy():
    a = leaf([1.0, 2.0])
    with pytest.warns(UserWarning):
        (a * a).sum().backward(create_graph=True)
    assert a.grad.requires_grad and a.grad.grad_fn is not None
    (ga2,) = tgrad.autograd.grad(a.grad.sum(), a)
    np.testing.assert_array_equal(_np(ga2), [2.0, 2.0])


def test_float64_and_post_accumulate_hook():
    a = leaf([1.0, 2.0], dtype=tgrad.float64)
    seen = []
    a.register_post_accumulate_grad_hook(lambda t: seen.append(_np(t.grad)))
    (a * a).sum().backward()
    assert a.grad.dtype is tgrad.float64
    np.testing.assert_array_equal(seen[0], [2.0, 4.0])


# ------------------------------------------------------------------ 2. the implicit seed costs no launch
def test_implicit_seed_is_a_host_copy_marked_for_backward_rules():
    for dt in (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16):
        a = leaf([[2.0]], dtype=dt)
        y = a * 3                                     # shape (1, 1): one element
        seen = []
        y.register_hook(lambda g: seen.append(g))
        with tgrad.profiler.profile() as prof:
            y.backward()
        assert prof.launches_by_op == {"mul.backward": 1}     # nothing for the seed, no clone
        (g,) = seen
        assert g._implicit_seed is True and g._version == 0
        assert g.dtype is dt and g.device == y.device and tuple(g.shape) == (1, 1)
        np.testing.assert_array_equal(_np(g).astype(np.float64), [[1.0]])
        np.testing.assert_array_equal(_np(a.grad).astype(np.float64), [[3.0]])


def test_implicit_seed_of_a_scalar_leaf_becomes_its_grad_unmarked():
    a = leaf(2.0, dtype=tgrad.float64)
    with tgrad.profiler.profile() as prof:
        a.backward()
    assert prof.total_launches == 0
    assert a.grad.dtype is tgrad.float64 and float(a.grad) == 1.0
    assert not getattr(a.grad, "_implicit_seed", False)


def test_mean_of_the_implicit_seed_needs_no_launch():
    """MeanBackward of the seed is 1 / n from the host, equal to what the division of an explicit 1 gives."""
    for dt in (tgrad.float32, tgrad.float64):
        for shape, kw in (((80, 1), {}), ((3, 7), {"dim": (0, 1), "keepdim": True}), ((1, 33), {"dim": 1})):
            x = tgrad.tensor(np.random.default_rng(0).standard_normal(shape), dtype=dt, requires_grad=True)
            h = x * 2
            loss = h.mean(**kw)
            seen = []
            h.register_hook(lambda g: seen.append(g))
            with tgrad.profiler.profile() as prof:
                loss.backward()
            assert prof.launches_by_op == {"mul.backward": 1}
            g_explicit = tgrad.autograd.grad(h.mean(**kw), h, tgrad.ones(loss.shape, dtype=dt))[0]
            np.testing.assert_array_equal(_np(seen[0]), _np(g_explicit))
            assert seen[0].dtype is dt and tuple(seen[0].shape) == shape
            np.testing.assert_array_equal(_np(x.grad), _np(g_explicit * 2))
    # a modified seed, float16 and create_graph keep the division
    x = leaf([1.0, 2.0, 3.0])
    loss = (x * 1).mean()
    loss.register_hook(lambda g: g.mul_(2))
    with tgrad.profiler.profile() as prof:
        loss.backward()
    assert prof.launches_by_op.get("mean_all.backward") == 1
    np.testing.assert_array_equal(_np(x.grad), np.full(3, np.float32(2) / np.float32(3)))
    for dt, create_graph in ((tgrad.float16, False), (tgrad.float32, True)):
        x = leaf([1.0, 2.0, 3.0], dtype=dt)
        with tgrad.profiler.profile() as prof:
            tgrad.autograd.grad((x * 1).mean(), x, create_graph=create_graph)
        assert prof.launches_by_op.get("mean_all.backward") == 1


def test_explicit_gradient_is_not_marked():
    a = leaf([2.0])
    seen = []
    y = a * 3
    y.register_hook(lambda g: seen.append(g))
    y.backward(tgrad.tensor([1.0]))
    y2 = a * 3
    y2.register_hook(lambda g: seen.append(g))
    y2.sum().backward()                      # the hook on y2 sees SumBackward0's output, not the seed
    assert not any(getattr(g, "_implicit_seed", False) for g in seen)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (a * tgrad.ones(2)).backward()


# ------------------------------------------------------------------ 3. ReluBackward0 folded into linear's backward
from tgrad.autograd import engine  # noqa: E402
import tgrad.nn.functional as F  # noqa: E402


@pytest.fixture
def no_fold():
    def run(fn, *args):
        engine.FOLD_RELU_INTO_LINEAR = False
        try:
            return fn(*args)
        finally:
            engine.FOLD_RELU_INTO_LINEAR = True
    return run


def _params(seed, dtype=tgrad.float32, n=5, k=4, m=6):
    rng = np.random.default_rng(seed)
    return [tgrad.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in ((n, k), (m, k), (m,))]


def _mlp_grads(seed, c, dtype=tgrad.float32, **backward):
    x, w, b = _params(seed, dtype)
    a = F.relu(F.linear(x, w, b))
    (a * tgrad.tensor(c, dtype=dtype)).sum().backward(**backward)
    return [_np(t.grad) for t in (x, w, b)]


def test_fold_saves_the_relu_launch_and_is_bit_identical(no_fold):
    rng = np.random.default_rng(0)
    c = rng.standard_normal((5, 6))
    c[0, :] = np.inf                 # non-finite gradients where the mask is 0 stay masked (where, not * 0)
    c[1, :3] = np.nan
    c[2, :] = -1.0
    for dt in (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16):
        with tgrad.profiler.profile() as prof:
            fused = _mlp_grads(1, c, dt)
        assert "relu.backward" not in prof.launches_by_op and prof.launches_by_op["linear.backward"] == 2
        with tgrad.profiler.profile() as prof:
            plain = no_fold(_mlp_grads, 1, c, dt)
        assert prof.launches_by_op["relu.backward"] == 1
        for f, p in zip(fused, plain):
            assert f.dtype == p.dtype and np.array_equal(f, p, equal_nan=True)


def test_training_step_b_shape_has_no_relu_launch(no_fold):
    def step():
        rng = np.random.default_rng(3)
        tgrad.manual_seed(0)
        model = tgrad.nn.Sequential(tgrad.nn.Linear(16, 32), tgrad.nn.ReLU(), tgrad.nn.Linear(32, 10))
        x = tgrad.tensor(rng.random((8, 16), dtype=np.float32))
        y = tgrad.tensor(rng.integers(0, 10, 8))
        with tgrad.profiler.profile() as prof:
            F.cross_entropy(model(x), y).backward()
        return prof, [_np(p.grad) for p in model.parameters()]
    prof, fused = step()
    assert "relu.backward" not in prof.launches_by_op
    prof0, plain = no_fold(step)
    assert prof.total_launches == prof0.total_launches - 1
    assert all(np.array_equal(f, p) for f, p in zip(fused, plain))


def test_h_used_twice_is_not_folded():
    x, w, b = _params(2)
    h = F.linear(x, w, b)
    c = tgrad.tensor(np.random.default_rng(0).standard_normal((5, 6)), dtype=tgrad.float32)
    with tgrad.profiler.profile() as prof:
        (F.relu(h) * c + h * 2).sum().backward()
    assert prof.launches_by_op["relu.backward"] == 1
    xn, wn, bn, cn = (_np(t) for t in (x, w, b, c))
    hn = xn @ wn.T + bn
    gh = np.where(hn > 0, cn, 0) + 2
    np.testing.assert_allclose(_np(w.grad), gh.T @ xn, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(b.grad), gh.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(x.grad), gh @ wn, rtol=1e-5, atol=1e-5)


def test_hooks_or_retain_grad_on_h_prevent_the_fold_and_see_the_masked_grad():
    c = np.random.default_rng(0).standard_normal((5, 6))
    ref = _mlp_grads(4, c)
    for kind in ("tensor_hook", "retain_grad", "node_prehook", "node_hook", "hook_on_a"):
        x, w, b = _params(4)
        h = F.linear(x, w, b)
        a = F.relu(h)
        seen = []
        if kind == "tensor_hook":
            h.register_hook(lambda g: seen.append(_np(g)))
        elif kind == "retain_grad":
            h.retain_grad()
        elif kind == "node_prehook":
            h.grad_fn.register_prehook(lambda gs: seen.append(_np(gs[0])))
        elif kind == "node_hook":
            a.grad_fn.register_hook(lambda gi, go: seen.append(_np(gi[0])))
        else:
            a.register_hook(lambda g: seen.append(None))
        with tgrad.profiler.profile() as prof:
            (a * tgrad.tensor(c, dtype=tgrad.float32)).sum().backward()
        assert prof.launches_by_op["relu.backward"] == 1, kind
        masked = np.where(_np(h) > 0, c, 0).astype(np.float32)
        if kind == "retain_grad":
            np.testing.assert_array_equal(_np(h.grad), masked)
        elif kind != "hook_on_a":
            np.testing.assert_array_equal(seen[0], masked)
        for got, want in zip((x, w, b), ref):
            np.testing.assert_array_equal(_np(got.grad), want)


def test_fold_with_retain_graph_and_freed_graph_errors():
    c = np.random.default_rng(0).standard_normal((5, 6))
    x, w, b = _params(5)
    a = F.relu(F.linear(x, w, b))
    loss = (a * tgrad.tensor(c, dtype=tgrad.float32)).sum()
    loss.backward(retain_graph=True)
    first = [_np(t.grad) for t in (x, w, b)]
    with tgrad.profiler.profile() as prof:
        loss.backward()
    assert "relu.backward" not in prof.launches_by_op
    for t, f in zip((x, w, b), first):
        np.testing.assert_array_equal(_np(t.grad), 2 * f)
    assert a.grad_fn._released
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_fold_still_checks_the_relu_output_version():
    x, w, b = _params(6)
    a = F.relu(F.linear(x, w, b))
    loss = (a * 2).sum()
    with tgrad.no_grad():
        a.mul_(3)
    with pytest.raises(RuntimeError, match="which is output 0 of Relu, is at version 1; expected version 0"):
        loss.backward()


def test_fold_with_inputs_and_autograd_grad(no_fold):
    c = tgrad.tensor(np.random.default_rng(0).standard_normal((5, 6)), dtype=tgrad.float32)

    def grads(which):
        x, w, b = _params(7)
        h = F.linear(x, w, b)
        loss = (F.relu(h) * c).sum()
        if which == "grad_w":
            return [_np(g) for g in tgrad.autograd.grad(loss, [w, b])]
        if which == "grad_h":            # h is a requested input: its gradient is the masked one
            return [_np(g) for g in tgrad.autograd.grad(loss, [h, w])]
        loss.backward(inputs=[x])
        return [_np(x.grad), w.grad]
    for which in ("grad_w", "grad_h", "inputs"):
        fused, plain = grads(which), no_fold(grads, which)
        for f, p in zip(fused, plain):
            assert (f is None and p is None) or np.array_equal(f, p)


def test_create_graph_and_anomaly_do_not_fold():
    x, w, b = _params(8)
    a = F.relu(F.linear(x, w, b))
    with tgrad.profiler.profile() as prof:
        (gw,) = tgrad.autograd.grad((a * a).sum(), w, create_graph=True)
    assert prof.launches_by_op["relu.backward"] == 1
    with tgrad.autograd.set_detect_anomaly(True):
        a = F.relu(F.linear(x, w, b))
        with tgrad.profiler.profile() as prof:
            a.sum().backward()
    assert prof.launches_by_op["relu.backward"] == 1


def test_gradcheck_mlp_with_the_fold():
    rng = np.random.default_rng(9)
    x = tgrad.tensor(rng.standard_normal((4, 3)), dtype=tgrad.float64, requires_grad=True)
    w1 = tgrad.tensor(rng.standard_normal((5, 3)), dtype=tgrad.float64, requires_grad=True)
    b1 = tgrad.tensor(rng.standard_normal(5), dtype=tgrad.float64, requires_grad=True)
    w2 = tgrad.tensor(rng.standard_normal((2, 5)), dtype=tgrad.float64, requires_grad=True)
    b2 = tgrad.tensor(rng.standard_normal(2), dtype=tgrad.float64, requires_grad=True)

    def mlp(x, w1, b1, w2, b2):
        return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
    assert tgrad.autograd.gradcheck(mlp, (x, w1, b1, w2, b2))
    with tgrad.profiler.profile() as prof:
        mlp(x, w1, b1, w2, b2).sum().backward()
    assert "relu.backward" not in prof.launches_by_op


def test_add_and_sub_compute_no_gradient_for_a_constant_operand():
    """y - c and y + alpha * c with c not requiring grad: no neg/mul launch for c's gradient."""
    x = leaf([1.0, -2.0, 3.0])
    c = tgrad.tensor([0.5, 0.5, 0.5])
    for y in (x - c, x.add(c, alpha=3), x.sub(c, alpha=2)):
        x.grad = None
        with tgrad.profiler.profile() as prof:
            (y * 2.0).sum().backward()
        assert not any(k in prof.launches_by_op for k in ("sub.backward", "add.backward")), prof.launches_by_op
        np.testing.assert_array_equal(_np(x.grad), [2.0, 2.0, 2.0])
    y = leaf([1.0, 1.0, 1.0])
    (x - y * 1.0).sum().backward()                # a graph operand still gets -grad
    np.testing.assert_array_equal(_np(y.grad), [-1.0, -1.0, -1.0])


# ------------------------------------------------------------------ 4. mul's gradient for a broadcast input: one launch
@pytest.mark.parametrize("dt", [tgrad.float32, tgrad.float64])
def test_mul_backward_sums_a_broadcast_gradient_in_its_own_launch(dt):
    """w * x with w broadcast: w's gradient sum_to_size(grad * x) is one reduce launch, bit-identical to
    the mul and sum_to_size it replaces (their outputs compared byte for byte), for any layout."""
    rng = np.random.default_rng(0)
    cases = [((1,), (80, 1)), ((1, 1), (80, 1)), ((7,), (5, 7)), ((5, 1), (5, 7)), ((1, 4, 1), (3, 4, 5)),
             ((3, 1, 5), (3, 4, 5)), ((1000, 1), (1000, 33)), ((), (4, 6)), ((1, 3, 1, 5, 1), (2, 3, 4, 5, 6))]
    for wshape, xshape in cases:
        for transposed in (False, True):
            w = tgrad.tensor(rng.standard_normal(wshape), dtype=dt, requires_grad=True)
            x = tgrad.tensor(rng.standard_normal(xshape[::-1] if transposed else xshape), dtype=dt)
            if transposed:
                x = x.permute(*range(x.dim())[::-1])
            c = tgrad.tensor(rng.standard_normal(xshape), dtype=dt)
            y = w * x
            with tgrad.profiler.profile() as prof:
                (y * c).sum().backward()
            with tgrad.no_grad():
                ref = (c.expand(xshape) * x).sum_to_size(wshape)
            assert w.grad.dtype is dt and tuple(w.grad.shape) == wshape
            assert _np(w.grad).tobytes() == _np(ref).tobytes(), (wshape, xshape, transposed)
            if (wshape, xshape) in (((1,), (80, 1)), ((7,), (5, 7)), ((1000, 1), (1000, 33))):
                # c's mul and w's reduce (two launches when ATen sums some of the columns in another order)
                assert prof.launches_by_op["mul.backward"] in (2, 3), prof.launches_by_op
    # recorded (create_graph) it stays two differentiable ops
    w, x = leaf([2.0]), leaf([[1.0], [2.0], [3.0]])
    (g,) = tgrad.autograd.grad((w * x).sum(), w, create_graph=True)
    assert g.grad_fn is not None
    np.testing.assert_array_equal(_np(g), [6.0])
