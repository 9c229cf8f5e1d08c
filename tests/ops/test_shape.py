"""Shape ops beyond the OpInfos: PyTorch's special cases, views vs copies, grad_fn names, error texts."""
import numpy as np
import pytest

import tgrad

RNG = np.random.default_rng(0)
XN = RNG.standard_normal((2, 3, 4))


def _x(device, requires_grad=False):
    return tgrad.tensor(XN, device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach()._host_copy()


def test_cat_promotes_and_skips_legacy_empty(device):
    a = tgrad.ones(2, 3, dtype=tgrad.int64, device=device)
    b = tgrad.zeros(1, 3, dtype=tgrad.float32, device=device)
    c = tgrad.cat([a, tgrad.zeros(0, device=device), b])
    assert c.dtype is tgrad.float32 and c.shape == (3, 3)
    np.testing.assert_array_equal(_np(c), [[1] * 3, [1] * 3, [0] * 3])
    assert tgrad.concat is tgrad.cat and tgrad.concatenate is tgrad.cat


def test_cat_stack_noncontiguous_and_grad_fn(device):
    x = _x(device, requires_grad=True)
    parts = [x.transpose(0, 2), x[:, ::2].transpose(0, 2)]
    c = tgrad.cat(parts, dim=1)
    np.testing.assert_array_equal(_np(c), np.concatenate([XN.transpose(2, 1, 0), XN[:, ::2].transpose(2, 1, 0)], 1))
    assert c.grad_fn.name() == "CatBackward0" and len(c.grad_fn.next_functions) == 2
    s = tgrad.stack(parts[:1] * 3, dim=-1)
    assert s.grad_fn.name() == "StackBackward0" and s.shape == (4, 3, 2, 3)
    (c.sum() + s.sum()).backward()
    g = np.full(XN.shape, 4.0)
    g[:, ::2] += 1
    np.testing.assert_array_equal(_np(x.grad), g)


@pytest.mark.parametrize("f,msg", [
    (lambda d: tgrad.cat([]), "torch.cat(): expected a non-empty list of Tensors"),
    (lambda d: tgrad.cat([tgrad.ones(2, 3, device=d), tgrad.ones(2, 4, device=d)]),
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the "
     "list."),
    (lambda d: tgrad.cat([tgrad.ones(2, 3, device=d), tgrad.ones(2, 3, 1, device=d)]),
     "Tensors must have same number of dimensions: got 2 and 3"),
    (lambda d: tgrad.cat([tgrad.ones((), device=d)]), "zero-dimensional tensor (at position 0) cannot be concatenated"),
    (lambda d: tgrad.stack([tgrad.ones(3, 4, device=d), tgrad.ones(2, 4, device=d)]),
     "stack expects each tensor to be equal size, but got [3, 4] at entry 0 and [2, 4] at entry 1"),
    (lambda d: tgrad.stack([]), "stack expects a non-empty TensorList"),
    (lambda d: tgrad.ones(3, 4, device=d).split([1, 1]),
     "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 0), but got "
     "split_sizes=[1, 1]"),
    (lambda d: tgrad.ones(3, device=d).chunk(0), "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda d: tgrad.ones(3, device=d).narrow(0, 2, 2), "start (2) + length (2) exceeds dimension size (3)."),
    (lambda d: tgrad.ones(3, 4, device=d).unflatten(1, (3, 3)),
     "unflatten: Provided sizes [3, 3] don't multiply up to the size of dim 1 (4) in the input tensor"),
    (lambda d: tgrad.ones(3, 4, device=d).flip(0, 0), "dim 0 appears multiple times in the list of dims"),
    (lambda d: tgrad.ones(3, 4, device=d).roll((1, 2), (0,)), "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda d: tgrad.ones(3, 4, device=d).repeat(2),
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    (lambda d: tgrad.ones(3, device=d).tril(), "tril: input tensor must have at least 2 dimensions"),
    (lambda d: tgrad.ones(2, 2, device=d).diagonal(0, 0, 0), "diagonal dimensions cannot be identical 0, 0"),
    (lambda d: tgrad.diag(tgrad.ones(2, 2, 2, device=d)), "diag(): Supports 1D or 2D tensors. Got 3D"),
])
def test_errors(f, msg, device):
    with pytest.raises((RuntimeError, ValueError)) as e:
        f(device)
    assert str(e.value) == msg


def test_split_chunk_unbind_are_views(device):
    x = _x(device)
    assert [p.shape[2] for p in x.split(3, 2)] == [3, 1]
    assert [p.shape[1] for p in x.chunk(2, 1)] == [2, 1]
    assert [p.shape[0] for p in tgrad.ones(6, device=device).chunk(4)] == [2, 2, 2]   # PyTorch: 3 chunks
    assert [p.shape[0] for p in tgrad.ones(0, device=device).chunk(2)] == [0, 0]
    parts = x.unbind(1)
    assert len(parts) == 3 and all(p._base is x for p in parts)
    x.add_(1.0)
    np.testing.assert_array_equal(_np(parts[2]), XN[:, 2] + 1)      # views see writes to the base
    assert [p.shape for p in tgrad.split(x, [1, 3], 2)] == [(2, 3, 1), (2, 3, 3)]


def test_multi_output_backward_with_unused_outputs(device):
    x = _x(device, requires_grad=True)
    a, b, c = x.unbind(1)
    assert a.grad_fn.name() == "UnbindBackward0" and a.grad_fn is c.grad_fn
    assert (a._output_nr, c._output_nr) == (0, 2)
    (c * 2).sum().backward()            # grads for a and b are None: materialized as zeros
    g = np.zeros_like(XN)
    g[:, 2] = 2
    np.testing.assert_array_equal(_np(x.grad), g)
    x.grad = None
    p = x.split(1, 2)
    assert p[0].grad_fn.name() == "SplitBackward0"
    assert x.split([1, 3], 2)[1].grad_fn.name() == "SplitWithSizesBackward0"
    p[3].sum().backward()
    g = np.zeros_like(XN)
    g[..., 3] = 1
    np.testing.assert_array_equal(_np(x.grad), g)


def test_flip_roll_on_noncontiguous(device):
    x = _x(device).transpose(0, 2)[::2]
    xn = XN.transpose(2, 1, 0)[::2]
    np.testing.assert_array_equal(_np(x.flip(0, -1)), np.flip(xn, (0, -1)))
    np.testing.assert_array_equal(_np(x.roll(3)), np.roll(xn, 3))
    np.testing.assert_array_equal(_np(x.roll((-1, 7), (1, 2))), np.roll(xn, (-1, 7), (1, 2)))
    np.testing.assert_array_equal(_np(tgrad.fliplr(x[0])), np.fliplr(xn[0]))
    np.testing.assert_array_equal(_np(tgrad.flipud(x[0])), np.flipud(xn[0]))


def test_tril_triu_dtypes_and_inplace(device):
    x = tgrad.tensor(XN > 0, device=device)
    np.testing.assert_array_equal(_np(x.tril(-1)), np.tril(XN > 0, -1))
    y = tgrad.tensor(np.arange(24).reshape(2, 3, 4), device=device)
    v = y._version
    assert y.triu_(1) is y and y._version == v + 1
    np.testing.assert_array_equal(_np(y), np.triu(np.arange(24).reshape(2, 3, 4), 1))
    np.testing.assert_array_equal(_np(tgrad.tril(tgrad.tensor(XN[0], device=device), 10)), XN[0])


def test_repeat_tile_grad(device):
    x = tgrad.tensor(XN[0], device=device, requires_grad=True)
    y = x.repeat(2, 1, 3)
    assert y.shape == (2, 3, 12) and y.grad_fn.name() == "RepeatBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.full((3, 4), 6.0))
    assert x.tile((2,)).shape == (3, 8) and tgrad.tile(x, (2, 1, 1)).shape == (2, 3, 4)


def test_view_like_helpers(device):
    x = _x(device, requires_grad=True)
    m = x.movedim(0, -1)
    assert m.shape == (3, 4, 2) and m.grad_fn.name() == "PermuteBackward0" and m._base is x
    assert tgrad.moveaxis(x, (0, 1), (1, 0)).shape == (3, 2, 4)
    np.testing.assert_array_equal(_np(tgrad.movedim(x, (0, 2), (2, 0))), np.moveaxis(XN, (0, 2), (2, 0)))
    assert x.unflatten(2, (2, -1)).shape == (2, 3, 2, 2) and x.unflatten(2, (2, 2)).grad_fn.name() == "ViewBackward0"
    assert tgrad.flatten(x, 1).shape == (2, 12)
    assert x.mT.shape == (2, 4, 3) and x.T.shape == (4, 3, 2)
    n = x.narrow(2, -2, 2)
    assert n.grad_fn.name() == "SliceBackward0" and n._base is x
    np.testing.assert_array_equal(_np(n), XN[..., 2:])
    e = tgrad.ones(3, 1, device=device).expand_as(tgrad.ones(2, 3, 4, device=device))
    assert e.shape == (2, 3, 4) and e.stride() == (0, 1, 0)
    assert tgrad.broadcast_to(x, (5, 2, 3, 4)).grad_fn.name() == "ExpandBackward0"


def test_repeat_interleave(device):
    x = tgrad.tensor(XN[0], device=device, requires_grad=True)
    assert x.repeat_interleave(2, 0).grad_fn.name() == "ViewBackward0"
    assert x.repeat_interleave(tgrad.tensor([1, 0, 2], device=device), 0).grad_fn.name() == "IndexSelectBackward0"
    assert tgrad.repeat_interleave(tgrad.tensor([2, 1], device=device)).tolist() == [0, 0, 1]
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, but got "
                                           r"repeats.size\(0\) = 2 and input.size\(0\) = 3"):
        x.repeat_interleave(tgrad.tensor([1, 2], device=device), 0)


def test_diagonal_is_a_view(device):
    x = _x(device, requires_grad=True)
    d = x.diagonal(1, 1, 2)
    assert d._base is x and d.shape == (2, 3) and d.grad_fn.name() == "DiagonalBackward0"
    np.testing.assert_array_equal(_np(d), np.diagonal(XN, 1, 1, 2))
    assert tgrad.diag(tgrad.ones(2, device=device)).tolist() == [[1, 0], [0, 1]]
    assert tgrad.diag_embed(x).grad_fn.name() == "DiagEmbedBackward0"


# ------------------------------------------------------------------ 0-d tensors (expectations from PyTorch 2.13)
ZERO_D_OK = [   # (name, f, shape): dim 0 and -1 are valid on a 0-d tensor for most shape ops
    ("flip0", lambda x: x.flip(0), ()), ("flip-1", lambda x: x.flip(-1), ()), ("flip()", lambda x: x.flip(()), ()),
    ("squeeze0", lambda x: x.squeeze(0), ()), ("squeeze-1", lambda x: x.squeeze(-1), ()),
    ("squeeze()", lambda x: x.squeeze(), ()), ("squeeze(0,)", lambda x: x.squeeze((0,)), ()),
    ("unsqueeze0", lambda x: x.unsqueeze(0), (1,)), ("unsqueeze-1", lambda x: x.unsqueeze(-1), (1,)),
    ("movedim00", lambda x: x.movedim(0, 0), ()), ("movedim-1-1", lambda x: x.movedim(-1, -1), ()),
    ("movedim()", lambda x: x.movedim((), ()), ()), ("moveaxis", lambda x: tgrad.moveaxis(x, 0, -1), ()),
    ("transpose0-1", lambda x: x.transpose(0, -1), ()), ("swapaxes", lambda x: x.swapaxes(0, 0), ()),
    ("t", lambda x: x.t(), ()), ("T", lambda x: x.T, ()), ("mT", lambda x: x.mT, ()),
    ("flatten", lambda x: x.flatten(), (1,)), ("flatten0-1", lambda x: x.flatten(0, -1), (1,)),
    ("permute()", lambda x: x.permute(()), ()), ("reshape-1", lambda x: x.reshape(-1), (1,)),
    ("view11", lambda x: x.view(1, 1), (1, 1)), ("expand23", lambda x: x.expand(2, 3), (2, 3)),
    ("repeat()", lambda x: x.repeat(()), ()), ("repeat23", lambda x: x.repeat(2, 3), (2, 3)),
    ("roll", lambda x: x.roll(1), ()), ("tile", lambda x: x.tile((2,)), (2,)),
]
ZERO_D_ERR = [  # (f, exception, message)
    (lambda x: x.flip(1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x: x.flip((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda x: x.squeeze(1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x: x.unsqueeze(1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x: x.unsqueeze(2), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    (lambda x: x.movedim(0, 1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x: x.transpose(0, 1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x: x.flatten(0, 1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda x: x.narrow(0, 0, 1), RuntimeError, "narrow() cannot be applied to a 0-dim tensor."),
    (lambda x: tgrad.narrow(x, 0, 0, 1), RuntimeError, "narrow() cannot be applied to a 0-dim tensor."),
    (lambda x: x.permute(), TypeError, 'permute() missing 1 required positional arguments: "dims"'),
    (lambda x: x.select(0, 0), IndexError, "select() cannot be applied to a 0-dim tensor."),
    (lambda x: x.chunk(1), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
    (lambda x: x.split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
    (lambda x: x.roll(1, 0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda x: x.unbind(0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda x: x.unflatten(0, (1,)), RuntimeError, "Dimension specified as 0 but tensor has no dimensions"),
]


@pytest.mark.parametrize("name,f,shape", ZERO_D_OK, ids=[c[0] for c in ZERO_D_OK])
def test_shape_ops_on_0d(name, f, shape, device):
    x = tgrad.tensor(2.5, device=device, requires_grad=True)
    y = f(x)
    assert tuple(y.shape) == shape
    np.testing.assert_array_equal(_np(y), np.full(shape, 2.5))
    y.sum().backward()
    assert x.grad.shape == () and _np(x.grad) == float(np.prod(shape))


@pytest.mark.parametrize("f,exc,msg", ZERO_D_ERR)
def test_shape_op_errors_on_0d(f, exc, msg, device):
    with pytest.raises(exc) as e:
        f(tgrad.tensor(2.5, device=device))
    assert msg in str(e.value)


@pytest.mark.parametrize("f,exc,msg", [
    (lambda d: tgrad.ones(3, device=d).narrow(0, 0, -1), RuntimeError, "narrow(): length must be non-negative."),
    (lambda d: tgrad.ones(3, device=d).narrow(0, -5, 1), IndexError,
     "start out of range (expected to be in range of [-3, 3], but got -5)"),
    (lambda d: tgrad.ones(2, 3, device=d).movedim((0, 0), (0, 1)), RuntimeError,
     "movedim: repeated dim in `source` ([0, 0])"),
    (lambda d: tgrad.ones(2, 3, device=d).movedim((0, 1), (1, 1)), RuntimeError,
     "movedim: repeated dim in `destination` ([1, 1])"),
    (lambda d: tgrad.ones(1, 2, device=d).squeeze((0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
])
def test_narrow_movedim_squeeze_argument_errors(f, exc, msg, device):
    with pytest.raises(exc) as e:
        f(device)
    assert str(e.value) == msg
