"""The autograd code cells of the seed documents (../shared/seeds/000-004) run on tgrad.

The cells and their checks live in ``examples/seeds.py`` (the seed's code,
imports pointed at tgrad; ``seeds.check``): cells whose output is
deterministic or seeded (tgrad's cpu generator is PyTorch's mt19937) must print
exactly the seed's text (``torch.`` reads ``tgrad.`` in names such as
``tgrad.Size``); cells that draw unseeded random numbers (PyTorch seeds from
the operating system) are checked through the relations the seed states.
Every cell runs: a cell naming a tgrad feature that is missing fails.
"""
import importlib.util
import os
import warnings

import pytest


_spec = importlib.util.spec_from_file_location(
    "seed_cells", os.path.join(os.path.dirname(__file__), os.pardir, "examples", "seeds.py"))
seeds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seeds)


EPOCHS = (("n_epochs = 1000", "n_epochs = 40"),)   # seed 003's 1000 epochs: ~1 s per run, 40 suffice here


CPU_ONLY = True     # the seeds' cells print cpu tensors, compared with PyTorch's output (conftest)


@pytest.mark.parametrize("key", [c.key for c in seeds.CELLS])
def test_cell_matches_the_seed(key, device):
    cell = seeds.BY_KEY[key]
    if device == "cuda" and any("cuda" in c.code + (c.setup or "") for c in seeds.CELLS if c.key[:3] == key[:3]):
        pytest.skip("the seed moves to cuda when one is available; it shows PyTorch's cpu output")
    gone = seeds.missing(cell)
    assert not gone, f"seed cell {key} uses tgrad.{gone}, which does not exist"
    edits = EPOCHS if EPOCHS[0][0] in cell.code else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # 001-6's non-leaf .grad warnings: checked below
        out, ns, err = seeds.run(key, edits)
    seeds.check(key, out, ns, err, edits)


def test_001_6_non_leaf_grads_are_none_with_warnings():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out, ns, err = seeds.run("001-6")
    seeds.check("001-6", out, ns, err)
    msgs = [str(w.message) for w in rec if issubclass(w.category, UserWarning)]
    assert len([m for m in msgs if m.startswith("The .grad attribute of a Tensor that is not a leaf")]) == 3


def test_check_fails_on_a_wrong_result():
    out, ns, err = seeds.run("000-2")
    with pytest.raises(AssertionError, match="instead of"):
        seeds.check("000-2", out.replace("12.", "13."), ns, err)
    out, ns, err = seeds.run("003-1")
    ns["x"].grad.add_(1)
    with pytest.raises(AssertionError):
        seeds.check("003-1", out, ns, err)
