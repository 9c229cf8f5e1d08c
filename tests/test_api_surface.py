"""The public surface, declared by the op table (PyTorch's ``native_functions.yaml`` ``variants:``), and the
files an op family spans.

Each ``Op`` declares ``variants`` ("method": ``Tensor.<name>``, "function": ``tgrad.<name>``) and ``inplace``
(``Tensor.<name>_``); these tests fail on a form that is declared but missing, and on one that exists but is
not declared.  Forms under other names (``tgrad.absolute``, ``F.relu``, ``Tensor.__add__``) are written out
where PyTorch has them and are not checked here.

Adding an element-wise op, e.g. ``logit`` (``log(x / (1 - x))``, with ``eps`` clamping), takes three files
that need thought, one per layer, all named by the family (here ``unary``):

1. ``tgrad/kernels/unary.py``: ``logit_fn(x, eps, p1, p2)``, a ``@triton.jit`` FN for ``unary_kernel``.
2. ``tgrad/ops/unary.py``: its forward (``_unary_float(KU.logit_fn)``) and backward rule (written with tgrad
   ops), then the row ``LOGIT = Op("logit", ..., variants=("method", "function"), inplace=True)``, added to
   the file's ``ENTRIES``.
3. ``tgrad/testing/opinfos/unary.py``: one ``UNARY`` line with the numpy reference; ``tests/test_ops.py``
   then checks values, gradcheck and gradgradcheck on every dtype, and ``tests/kernels/test_aot.py`` compiles the new
   FN's specializations (no edit).

The rest is one-liners that the tests below list by name when missing:
``test_declared_forms_exist`` names ``Tensor.logit``, ``Tensor.logit_`` (tensor.py, written out as DESIGN §3
asks) and ``tgrad.logit`` (``_functional.py`` + the ``from ._functional import (...)`` block of
``tgrad/__init__.py``); ``test_every_table_entry_is_tested`` (tests/test_ops.py) names an op without an
OpInfo; an activation also needs ``nn.functional.<name>`` (``test_activations_have_functional_forms``).
There are no type stubs (``test_no_type_stubs``: a stub would be one more file to keep in step).
"""
import os

import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.ops import TABLE, activation
from tgrad.tensor import Tensor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMS = {"method": lambda n: hasattr(Tensor, n), "function": lambda n: hasattr(tgrad, n)}


def _declared(op):
    return {"method": "method" in op.variants, "function": "function" in op.variants,
            "inplace": op.inplace}


def _present(name):
    return {"method": FORMS["method"](name), "function": FORMS["function"](name),
            "inplace": not name.endswith("_") and hasattr(Tensor, name + "_")}


def test_variants_are_known_words():
    bad = {n: op.variants for n, op in TABLE.items() if set(op.variants) - {"method", "function"}}
    assert not bad, bad


def test_declared_forms_exist():
    where = {"method": "Tensor.{}", "function": "tgrad.{}", "inplace": "Tensor.{}_"}
    missing = sorted(where[k].format(n) for n, op in TABLE.items()
                     for k, want in _declared(op).items() if want and not _present(n)[k])
    assert not missing, f"declared in the op table but missing: {missing}"


def test_undeclared_forms_do_not_exist():
    where = {"method": "Tensor.{}", "function": "tgrad.{}", "inplace": "Tensor.{}_"}
    extra = sorted(where[k].format(n) for n, op in TABLE.items()
                   for k, have in _present(n).items() if have and not _declared(op)[k])
    assert not extra, f"public forms the op table does not declare (add them to the Op's variants): {extra}"


def test_inplace_implies_a_method():
    assert [n for n, op in TABLE.items() if op.inplace and "method" not in op.variants] == []


def test_activations_have_functional_forms():
    names = [op.name for op in activation.ENTRIES if not op.name.endswith("_backward")]
    assert len(names) == 17
    assert [n for n in names if not callable(getattr(F, n, None))] == []


FAMILIES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "tgrad", "ops"))
                  if f.endswith(".py") and not f.startswith("_"))
# families without a file of their own in a layer, and why
NO_KERNELS = {"as_strided": "views launch nothing; restride/copy_slices are strided copies on kernels/elementwise.py"}
NO_TESTS = {"as_strided": "tests/autograd/test_autograd_inplace.py (CopySlices, as_strided's backward)",
            "optim": "tests/optim/test_optim.py (the optimizers that launch them)"}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_has_one_name_in_every_layer(family):
    """kernels/X.py <-> ops/X.py <-> testing/opinfos/X.py <-> tests/ops/test_X.py."""
    files = {"kernels": f"tgrad/kernels/{family}.py", "opinfos": f"tgrad/testing/opinfos/{family}.py",
             "tests": f"tests/ops/test_{family}.py"}
    skip = {"kernels": NO_KERNELS, "tests": NO_TESTS}
    missing = [p for layer, p in files.items()
               if family not in skip.get(layer, {}) and not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, missing


def test_every_family_ends_in_one_literal_entries_list():
    import ast
    for family in FAMILIES:
        tree = ast.parse(open(os.path.join(ROOT, "tgrad", "ops", family + ".py")).read())
        assigns = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AugAssign))
                   and "ENTRIES" in ast.dump(n.targets[0] if isinstance(n, ast.Assign) else n.target)]
        assert len(assigns) == 1 and isinstance(assigns[0], ast.Assign), family
        assert isinstance(assigns[0].value, ast.List) and tree.body[-1] is assigns[0], family


def test_no_type_stubs():
    stubs = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROOT, "tgrad")) for f in fs if f.endswith(".pyi")]
    assert stubs == []
