"""OpInfo: how to test one op-table entry (samples, numpy reference, dtypes, tolerances).

The generic tests in ``tests/test_ops.py`` run, for every OpInfo: forward
against the numpy reference for every dtype, non-contiguous inputs,
``gradcheck`` in float64 and ``gradgradcheck``.  ``tgrad.testing.aot_workload`` runs
the same samples to find every kernel specialization to compile.
"""
import numpy as np

from .. import dtypes as D

# Forward tolerances per dtype (atol, rtol): fp16/bf16 are stored with 11/8 significant bits.
TOL = {"float64": (1e-10, 1e-7), "float32": (1e-5, 1.3e-6 * 4), "float16": (1e-3, 1e-3),
       "bfloat16": (1e-2, 8e-3)}


class SampleInput:
    """args: numpy arrays (become tensors) or Python values; kwargs passed to the op as given."""

    def __init__(self, *args, grad=True, **kwargs):
        self.args = tuple(np.asarray(a) if isinstance(a, np.generic) else a for a in args)
        self.kwargs = kwargs
        self.grad = grad            # include in gradcheck / gradgradcheck

    def __repr__(self):
        shapes = [a.shape if isinstance(a, np.ndarray) else a for a in self.args]
        return f"SampleInput({shapes}, {self.kwargs})"


class OpInfo:
    """Test description of one op.

    op(*tensors_and_values, **kwargs) calls tgrad; ref(*numpy_arrays, **kwargs) computes the expected
    result in float64 numpy.  ``samples(rng)`` returns SampleInputs with float64 numpy arrays;
    arrays are cast to the dtype under test (integer dtypes: rounded).  ``diff_args``: indices of
    array args that get requires_grad in gradient tests (default: all float arrays).
    """

    def __init__(self, name, op, ref, samples, dtypes=(D.float32, D.float64), grad=True, gradgrad=True,
                 diff_args=None, tol=None, noncontig=True, covers=(), exact_dtypes=False, out_dtype=None,
                 grad_tol=None, layout_order=False):
        self.name = name
        self.op = op
        self.ref = ref
        self.samples = samples
        self.dtypes = tuple(dtypes)
        self.grad = grad
        self.gradgrad = gradgrad
        self.diff_args = diff_args
        self.tol = tol or {}
        self.noncontig = noncontig
        self.layout_order = layout_order  # sums in ATen's layout-dependent order: non-contiguous input may round apart
        self.covers = tuple(covers)   # extra op-table names this OpInfo exercises on purpose
        self.out_dtype = out_dtype
        self.grad_tol = grad_tol or (1e-5, 1e-3)

    def __repr__(self):
        return f"OpInfo({self.name})"

    def tolerance(self, dtype):
        return self.tol.get(dtype.name, TOL.get(dtype.name, (0, 0)))

    def sample_inputs(self, seed=0):
        return self.samples(np.random.default_rng(seed))


def to_tensor(a, dtype, device, requires_grad=False, noncontig=False):
    """numpy array -> tgrad tensor of ``dtype`` (optionally non-contiguous: every other element of a wider buffer)."""
    from .. import _creation as creation
    arr = np.asarray(a)
    if not dtype.is_floating_point:     # (an ndarray even when 0-dim: numpy data converts as numpy casts)
        arr = np.asarray(np.rint(arr) if dtype is not D.bool_ else arr != 0)
    if noncontig and arr.ndim >= 1 and arr.size > 1:
        wide = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), dtype=arr.dtype)
        wide[..., ::2] = arr
        t = creation.tensor(wide, dtype=dtype, device=device)[..., ::2]
        assert not t.is_contiguous()
    else:
        t = creation.tensor(arr, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def cast_like(a, dtype):
    """The numpy value the op actually sees for ``a`` under ``dtype`` (rounded to the dtype), as float64."""
    arr = np.asarray(a)
    if not dtype.is_floating_point:
        return (np.rint(arr) if dtype is not D.bool_ else arr != 0).astype(dtype.np).astype(np.float64) \
            if dtype is not D.bool_ else (arr != 0)
    return arr.astype(dtype.np).astype(np.float64)
