"""The AOT workload: what ``tgrad.kernels.aot`` records and compiles for the GPU.

    python -m tgrad.testing.aot_workload --arch 80 90

Every OpInfo of ``tgrad.testing.opinfo_db`` forward and backward (twice when it
is twice differentiable) for every dtype it declares, on contiguous and
non-contiguous inputs, plus casts between every pair of dtypes, fill, the
random kernels and every addressing layout.  It runs the whole of tgrad, so it
lives here, above the kernels layer; ``tgrad.kernels.aot`` takes it as an argument.
"""
import sys

import numpy as np

import tgrad
from tgrad import dtypes as D
from tgrad import random as _random
from tgrad.autograd import dispatch
from tgrad.kernels.runtime import launcher as T
from tgrad.kernels import aot

from .opinfo import to_tensor
from .opinfo_db import OP_DB


def default_workload(device="cpu"):
    """Basics (casts, fill, random, every layout), then the op database; returns [(label, exception)]."""
    errors = []
    _basics(device, errors)
    for o in OP_DB:
        for dt in o.dtypes:
            _try(errors, f"{o.name} {dt.name}", _opinfo_run, o, dt, device, dt is o.dtypes[0])
    return errors


def _try(errors, label, fn, *args):
    try:
        fn(*args)
        return
    except Exception as e:  # noqa: BLE001  (reported, and the kernel-coverage test notices the gap)
        if not T.DRY_RUN:
            errors.append((label, e))
            return
    T.DRY_RUN = False           # garbage values can trip data-dependent checks: run this item for real
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        errors.append((label, e))
    finally:
        T.DRY_RUN = True


def _basics(device, errors):
    for src in D.ALL:
        x = tgrad.ones(3, 5, dtype=src, device=device)
        for dst in D.ALL:
            _try(errors, f"cast {src.name}->{dst.name}", lambda: (x.to(dst), x.t().to(dst)))
        _try(errors, f"fill {src.name}", lambda: x.fill_(1))
    ph = tgrad.Generator(device, _philox=True)      # cuda's generator (on cpu too: the kernels cuda runs)
    for dt in D.FLOATING:
        _try(errors, f"random {dt.name}", lambda: (tgrad.rand(7, dtype=dt, device=device),
                                                   tgrad.randn(20, dtype=dt, device=device),
                                                   tgrad.empty(7, dtype=dt, device=device).bernoulli_(0.5),
                                                   tgrad.rand(7, dtype=dt, device=device, generator=ph),
                                                   tgrad.randn(7, dtype=dt, device=device, generator=ph)))
        _try(errors, f"dropout philox {dt.name}", lambda: dispatch.call(
            "dropout", tgrad.ones(7, dtype=dt, device=device), p=0.5, training=True, **ph._bernoulli_rng(7)))
    for dt in D.ALL[1:6]:
        _try(errors, f"randint {dt.name}", lambda: (tgrad.randint(0, 5, (7,), dtype=dt, device=device),
                                                    tgrad.randint(0, 5, (7,), dtype=dt, device=device, generator=ph)))
    _try(errors, "randint wide", lambda: tgrad.randint(0, 1 << 40, (7,), device=device))
    for h in (64, 128):         # recurrent layers where shared memory binds (their compile options per arch)
        for m in (tgrad.nn.LSTM(4, h), tgrad.nn.GRU(4, h), tgrad.nn.RNN(4, h)):
            _try(errors, f"{type(m).__name__} hidden {h}",
                 lambda: m.to(device)(tgrad.randn(3, 2, 4, device=device))[0].sum().backward())
    _try(errors, "sparse sums, cpu tiles", _sparse_tiles, device)
    for dt in (D.complex64, D.complex128):     # complex kernels no OpInfo reaches (its samples are real arrays)
        _try(errors, f"complex eq, prod, Bluestein {dt.name}", _complex_extras, dt, device)
    for nd in range(2, 7):      # views none of whose dims merge: every addressing branch (X_ND = nd)
        v = tgrad.ones(*range(2, 2 + nd), device=device).permute(*reversed(range(nd)))
        _try(errors, f"layout {nd} dims", lambda: (v.contiguous(), v + v.contiguous()))


def _sparse_tiles(device):
    """The segment sums' cpu-only kernels (ops/sparse.py's ``_rounds_sum``: a GPU takes segment_sum_kernel),
    compiled too so that every kernel is; each mode, with and without row pointers."""
    from tgrad.ops import sparse as S
    row = tgrad.tensor([0, 2, 0, 2, 2] + [1] * 20, device=device)
    for dt in (D.float32, D.float64, D.int64):
        src = tgrad.ones(25, 2, dtype=dt, device=device)
        S._rounds_sum("coalesce", src, row, tgrad.empty(3, 2, dtype=dt, device=device))
        S._rounds_sum("add", src, row, tgrad.zeros(3, 2, dtype=dt, device=device), alpha=2, fma=dt is not D.int64)
    dense = tgrad.ones(4, 3, device=device)
    col = tgrad.zeros(25, dtype=tgrad.int64, device=device)
    S._rounds_sum("mm", tgrad.ones(25, device=device), row, tgrad.zeros(3, 3, device=device), col=col, dense=dense,
                  fma=True)
    crow = tgrad.tensor([0, 2, 22, 25], device=device)
    S._rounds_sum("mm", tgrad.ones(25, device=device), row.sort()[0], tgrad.zeros(3, 3, device=device), start=crow,
                  col=col, dense=dense, fma=True)


def _complex_extras(dt, device):
    """``ccompare_kernel`` (eq/ne), ``cprod_rows_kernel`` (prod, cumprod and their backward) and ``chirp_kernel``
    (an FFT of a prime length past FOUR_STEP_MIN takes Bluestein's chirp convolution)."""
    x = tgrad.randn(3, 5, dtype=dt, device=device, requires_grad=True)
    (x == x.detach(), x != 1j)
    (x.prod(1).sum() + x.cumprod(1).sum()).abs().backward()
    tgrad.fft.fft(tgrad.randn(2, 521, dtype=dt, device=device))


def _opinfo_run(o, dt, device, full):
    """Forward and backward of every sample; ``full``: also non-contiguous inputs and double backward.

    (Other dtypes add argument types and COMPUTE types; layouts and the
    double-backward math are the same as for the first dtype, float64 aside.)
    """
    grad = o.grad and dt.is_floating_point
    gradgrad = o.gradgrad and (full or dt.name == "float64")
    for noncontig in (False, True) if o.noncontig and full else (False,):
        for sample in o.sample_inputs():
            args = [to_tensor(a, dt, device, requires_grad=grad and sample.grad and (o.diff_args is None or
                                                                                   i in o.diff_args),
                              noncontig=noncontig) if isinstance(a, np.ndarray) else a
                    for i, a in enumerate(sample.args)]
            out = o.op(*args, **sample.kwargs)
            outs = [t for t in (out if isinstance(out, tuple) else (out,))
                    if isinstance(t, tgrad.Tensor) and t.requires_grad]
            leaves = [a for a in args if isinstance(a, tgrad.Tensor) and a.requires_grad]
            if not (outs and leaves):
                continue
            gs = tgrad.autograd.grad(outs, leaves, grad_outputs=[tgrad.ones_like(t) for t in outs],
                                     create_graph=gradgrad, allow_unused=True)
            gg = [g for g in gs if g is not None and g.requires_grad]
            if gradgrad and gg:
                tgrad.autograd.grad([g.sum() for g in gg], leaves, allow_unused=True)


def record(dry=True):
    """``aot.record`` of the default workload: (distinct Specs, [(label, exception)])."""
    return aot.record(default_workload, dry)


def run_script(argv):
    """Run ``argv[0]`` as ``__main__`` with ``sys.argv = argv`` on cpu (it may pick its device itself).  The
    cpu default generator is swapped for a Philox one, cuda's stream, so the random kernels recorded are the
    ones a cuda run launches (the cpu generator's mt19937 words kernels are not)."""
    import runpy
    prev_argv, prev_dev, prev_gen = sys.argv, tgrad.get_default_device(), _random.default_generator
    sys.argv = list(argv)
    tgrad.set_default_device("cpu")
    _random.default_generator = _random.Generator("cpu", _philox=True)
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
    finally:
        sys.argv = prev_argv
        tgrad.set_default_device(prev_dev)
        _random.default_generator = prev_gen


if __name__ == "__main__":
    sys.exit(aot.main(default_workload, run_script=run_script))
