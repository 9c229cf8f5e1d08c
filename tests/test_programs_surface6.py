"""Surface that the issue-14 programs (ViT, seq2seq, DDPM, LoRA, GNN, PPO, quantile regression, ...) hit."""
import numpy as np
import pytest

import tgrad

CPU_ONLY = True


def test_quantile_and_nanquantile_with_nan_rows_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 7))
    a[1, 2] = np.nan
    a[3] = np.nan
    x = tgrad.tensor(a)
    qs = [0.1, 0.5, 0.77]
    for mode in ("linear", "lower", "higher", "midpoint", "nearest"):
        with np.errstate(all="ignore"):
            want_q = np.quantile(a, qs, axis=1, method=mode)
            want_n = np.nanquantile(a, qs, axis=1, method=mode)
        got_q = tgrad.quantile(x, tgrad.tensor(qs, dtype=tgrad.float64), dim=1, interpolation=mode)
        got_n = tgrad.nanquantile(x, tgrad.tensor(qs, dtype=tgrad.float64), dim=1, interpolation=mode)
        np.testing.assert_allclose(got_q.numpy(), want_q, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(got_n.numpy(), want_n, rtol=1e-12, equal_nan=True)
    assert np.isnan(tgrad.quantile(x, 0.5).item())
    np.testing.assert_allclose(tgrad.nanquantile(x, 0.3).item(), np.nanquantile(a, 0.3), rtol=1e-12)
    k = x.nanquantile(0.3, dim=0, keepdim=True)
    assert k.shape == (1, 7)
    np.testing.assert_allclose(k.numpy(), np.nanquantile(a, 0.3, axis=0, keepdims=True), rtol=1e-12)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        tgrad.quantile(x, tgrad.tensor([0.5], dtype=tgrad.float32))


def test_gradgradcheck_draws_grad_outputs_from_the_global_generator():
    # PyTorch's gradgradcheck makes its grad_outputs with make_tensor(low=-1, high=1): uniform_ over the
    # output's shape from the global generator, so the draws after it are those after that uniform_
    x = tgrad.tensor([0.3, -1.2, 2.0], dtype=tgrad.float64, requires_grad=True)
    tgrad.manual_seed(5)
    assert tgrad.autograd.gradgradcheck(lambda t: t ** 3, (x,))
    after = tgrad.randn(4)
    assert tgrad.autograd.gradgradcheck(lambda t: t ** 3, (x,), gen_non_contig_grad_outputs=True)
    tgrad.manual_seed(5)
    tgrad.empty(3, dtype=tgrad.float64).uniform_(-1, 1)
    np.testing.assert_array_equal(after.numpy(), tgrad.randn(4).numpy())


def test_pca_and_svd_lowrank_recover_a_low_rank_matrix():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 8))
    A = tgrad.tensor(a)
    tgrad.manual_seed(0)
    U, S, V = tgrad.pca_lowrank(A, q=4)
    c = a - a.mean(0)
    np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(c, compute_uv=False)[:3], rtol=1e-10)
    assert U.shape == (20, 4) and V.shape == (8, 4)
    np.testing.assert_allclose((U[:, :3] * S[:3]) @ V[:, :3].T, c, atol=1e-10)
    U, S, V = tgrad.svd_lowrank(A.T, q=3, niter=1)           # wide input: runs on A^H and swaps U, V
    assert U.shape == (8, 3) and V.shape == (20, 3)
    np.testing.assert_allclose(((U * S) @ V.T).numpy(), a.T, atol=1e-10)
    with pytest.raises(ValueError, match=r"q\(=9\) must be non-negative integer and not greater than min\(m, n\)=8"):
        tgrad.pca_lowrank(A, q=9)


def test_jacfwd_and_hessian_zeros_carry_forward_mode_signs():
    # PyTorch printed hessian(lambda v: (v ** 3).sum())([0.5, -1, 2]): row i's zeros carry the sign of v[i]
    # (forward mode's 6 v[i] * 0), not column j's as a reverse-mode Jacobian gives
    v = tgrad.tensor([0.5, -1.0, 2.0])
    h = tgrad.func.hessian(lambda t: (t ** 3).sum())(v).numpy()
    np.testing.assert_array_equal(h, np.diag([3.0, -6.0, 12.0]))
    assert np.signbit(h).tolist() == [[False] * 3, [True] * 3, [False] * 3]
    f = lambda a, b: (a * b.sum(), a.sum() * b)
    ja, jb = tgrad.func.jacfwd(f, argnums=(0, 1))(tgrad.tensor([1.0, 2.0]), tgrad.tensor([3.0, 4.0, 5.0]))
    ra, rb = tgrad.func.jacrev(f, argnums=(0, 1))(tgrad.tensor([1.0, 2.0]), tgrad.tensor([3.0, 4.0, 5.0]))
    for x, y in zip(ja + jb, ra + rb):
        assert x.shape == y.shape
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    j, aux = tgrad.func.jacfwd(lambda t: (t.sin(), t.cos()), has_aux=True)(v)
    np.testing.assert_allclose(j.numpy(), np.diag(np.cos(v.numpy())), rtol=1e-6)
    np.testing.assert_array_equal(aux.numpy(), v.cos().numpy())


def test_untyped_and_typed_storage_api():
    x = tgrad.arange(6.0)
    s = x.untyped_storage()
    assert s is x.untyped_storage() and s is x[2:].untyped_storage()      # one object per storage
    assert x.clone().untyped_storage() is not s
    assert s.data_ptr() == x.data_ptr() and s.nbytes() == s.size() == len(s) == 24 and s.element_size() == 1
    assert s.device == x.device and not s.is_cuda
    assert s.tolist() == list(np.arange(6, dtype=np.float32).tobytes())
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        t = x[1:].storage()
    assert (t.size(), len(t), t.element_size(), t.nbytes(), t.dtype) == (6, 6, 4, 24, tgrad.float32)
    assert t.data_ptr() == x.data_ptr() and t.untyped() is s
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert repr(t).splitlines()[0] == " 0.0" and repr(t).endswith("of size 6]")


def test_parameter_dict_repr_shows_type_names_and_typename():
    d = tgrad.nn.ParameterDict({"w": tgrad.nn.Parameter(tgrad.ones(1, 2, dtype=tgrad.float64)), "c": tgrad.ones(3)})
    assert repr(d).splitlines()[1:3] == ["    (c): Parameter containing: [tgrad.FloatTensor of size 3]",
                                         "    (w): Parameter containing: [tgrad.DoubleTensor of size 1x2]"]
    pl = tgrad.nn.ParameterList([tgrad.nn.Parameter(tgrad.ones(2, dtype=tgrad.bfloat16))])
    assert repr(pl) == "ParameterList(  (0): Parameter containing: [tgrad.bfloat16 of size 2])"   # (one child: one line)
    assert tgrad.typename(tgrad.ones(2, dtype=tgrad.int64)) == "tgrad.LongTensor"
    assert tgrad.typename(tgrad.nn.Linear) == "tgrad.nn.modules.linear.Linear" and tgrad.typename(3) == "int"


def test_compiled_module_names_carry_the_orig_mod_prefix():
    m = tgrad.nn.Sequential(tgrad.nn.Linear(2, 3), tgrad.nn.BatchNorm1d(3))
    cm = tgrad.compile(m)
    keys = list(cm.state_dict().keys())
    assert keys[:2] == ["_orig_mod.0.weight", "_orig_mod.0.bias"] and len(keys) == 7
    assert [n for n, _ in cm.named_parameters()][0] == "_orig_mod.0.weight"
    assert [n for n, _ in cm.named_modules()][:2] == ["", "_orig_mod"]
    assert repr(cm).splitlines()[:2] == ["OptimizedModule(", "  (_orig_mod): Sequential("]
    sd = cm.state_dict()
    cm.load_state_dict(sd)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0.weight"'):
        m.load_state_dict(sd)
    assert list(cm.parameters())[0] is m[0].weight
    np.testing.assert_array_equal(cm(tgrad.ones(4, 2)).detach().numpy(), m(tgrad.ones(4, 2)).detach().numpy())


def test_softshrink_hardshrink_are_table_ops_with_pytorchs_zeros_and_grad_fns():
    F = tgrad.nn.functional
    x = tgrad.tensor([-0.3, 0.2, -0.0, 0.0, -0.7, 0.8, 0.5, -0.5], requires_grad=True)
    y = F.softshrink(x)
    assert y.grad_fn.name() == "SoftshrinkBackward0"
    np.testing.assert_allclose(y.detach().numpy(), [0, 0, 0, 0, -0.2, 0.3, 0, 0], atol=1e-7)
    # PyTorch printed -0. for the negative inputs inside [-lambd, lambd] of a tensor this small
    assert np.signbit(y.detach().numpy()).tolist() == [True, False, True, False, True, False, False, True]
    y.sum().backward()
    assert x.grad.tolist() == [0, 0, 0, 0, 1, 1, 0, 0]
    x.grad = None
    z = x.hardshrink(0.25)
    assert z.grad_fn.name() == "HardshrinkBackward0"
    np.testing.assert_array_equal(z.detach().numpy(), np.float32([-0.3, 0, 0, 0, -0.7, 0.8, 0.5, -0.5]))
    z.sum().backward()
    assert x.grad.tolist() == [1, 0, 0, 0, 1, 1, 1, 1]
    xd = tgrad.tensor([-0.3, 0.45, 2.0], dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: F.softshrink(t, 0.25), (xd,))
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0, but found to be -1.0."):
        F.softshrink(x, -1.0)


def test_put_and_put_index_the_flat_row_major_tensor():
    x = tgrad.zeros(2, 3)
    assert x.put_(tgrad.tensor([-1, 0]), tgrad.tensor([1.0, 2.0])) is x
    assert x.tolist() == [[2.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    t = tgrad.put(tgrad.zeros(2, 2).t(), tgrad.tensor([1]), tgrad.tensor([5.0]))    # logical order of the view
    assert t.tolist() == [[0.0, 5.0], [0.0, 0.0]]
    a = tgrad.zeros(3, requires_grad=True)
    s = tgrad.ones(2, requires_grad=True)
    y = a.put(tgrad.tensor([0, 0]), s * 2, accumulate=True)
    y.sum().backward()
    assert y.tolist() == [4.0, 0.0, 0.0] and a.grad.tolist() == [1.0, 1.0, 1.0] and s.grad.tolist() == [2.0, 2.0]
    with pytest.raises(IndexError, match="out of range: tried to access index 5 on a tensor of 2 elements."):
        tgrad.zeros(2).put_(tgrad.tensor([5]), tgrad.tensor([1.0]))
