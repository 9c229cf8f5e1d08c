"""The layering of DESIGN §2 as a test: every import of a tgrad module (top level or inside a function) goes
down or sideways, never up, except through the allowed seams; the import graph has no circle; the core
has at most five function-level imports, each naming the cycle it avoids; memory and kernels import alone.
"""
import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tgrad")

# DESIGN §2, top to bottom: a module may import modules of its own floor and of the floors before it.
# A name is a module or a package prefix; the longest matching name wins.
FLOORS = [
    ("ground", ("tgrad.dtypes", "tgrad.device", "tgrad._state", "tgrad._settings", "tgrad.backends", "tgrad._native")),
    ("memory", ("tgrad.memory",)),
    ("kernels", ("tgrad.kernels",)),
    ("tensor", ("tgrad.tensor", "tgrad._tensor_str", "tgrad.return_types", "tgrad._sparse")),
    ("ops", ("tgrad.ops",)),
    ("autograd", ("tgrad.autograd",)),
    ("api", ("tgrad._creation", "tgrad._functional", "tgrad._nn_functional", "tgrad.random", "tgrad._indexing",
             "tgrad.serialization", "tgrad.cuda", "tgrad._legacy", "tgrad.linalg", "tgrad.profiler",
             "tgrad._functional_more", "tgrad._einsum", "tgrad.special", "tgrad.threads", "tgrad.fft")),
    ("upper", ("tgrad.nn", "tgrad.optim", "tgrad.utils", "tgrad.distributed", "tgrad.multiprocessing",
               "tgrad._compile", "tgrad.compiler", "tgrad._dynamo", "tgrad.func", "tgrad.distributions")),
    ("tools", ("tgrad.testing", "tgrad.bench", "tgrad")),
]

# The allowed upward edges: (importer, imported package or module).
SEAMS = {
    # the one upward edge: the last statements of tensor.py bind the floors Tensor's methods reach
    ("tgrad.tensor", "tgrad.autograd"), ("tgrad.tensor", "tgrad.ops"), ("tgrad.tensor", "tgrad._creation"),
    ("tgrad.tensor", "tgrad._indexing"), ("tgrad.tensor", "tgrad.serialization"),
    ("tgrad.tensor", "tgrad._functional_more"), ("tgrad.tensor", "tgrad.linalg"), ("tgrad.tensor", "tgrad.fft"),
    ("tgrad.tensor", "tgrad._sparse"),     # SparseTensor subclasses Tensor: Tensor.add / to_sparse reach it
    # device asks the CUDA driver for the device count (memory holds devices, so this waits for the first call)
    ("tgrad.device", "tgrad.memory.cuda_driver"),
    # Module.compile() is tgrad.compile(self) (PyTorch's calls torch.compile), which captures Modules: one
    # function-level import, at the call
    ("tgrad.nn.modules.module", "tgrad._compile"),
}
CORE = ("tgrad.dtypes", "tgrad.device", "tgrad._state", "tgrad._native", "tgrad.memory", "tgrad.kernels", "tgrad.tensor",
        "tgrad.ops", "tgrad.autograd")


def _modules():
    mods = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = "tgrad." + os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                mods[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return mods


MODS = _modules()


def _targets(mod, node):
    """The tgrad modules an import statement of ``mod`` loads (a name imported from a package that is not
    a module of it counts as the package)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            pkg = mod if MODS[mod].endswith("__init__.py") else mod.rpartition(".")[0]
            base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
            src = ".".join(base + ([node.module] if node.module else []))
        else:
            src = node.module or ""
        names = [f"{src}.{a.name}" if f"{src}.{a.name}" in MODS else src for a in node.names]
    out = []
    for n in names:
        if n == "tgrad" or n.startswith("tgrad."):
            while n not in MODS:
                n = n.rpartition(".")[0]
            out.append(n)
    return out


def _imports():
    """[(importer, imported, line, function-level?, source line)] of every tgrad import in the package."""
    found = []
    for mod, path in MODS.items():
        src = open(path).read()
        lines = src.splitlines()

        def visit(node, in_def):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for t in _targets(mod, child):
                        found.append((mod, t, child.lineno, in_def, lines[child.lineno - 1]))
                visit(child, in_def or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        visit(ast.parse(src), False)
    return found


IMPORTS = _imports()


def floor(mod):
    best = None
    for i, (_, names) in enumerate(FLOORS):
        for n in names:
            if (mod == n or mod.startswith(n + ".")) and (best is None or len(n) > len(best[1])):
                best = (i, n)
    return best[0] if best else None


def _seam(a, b):
    return any(a == x and (b == y or b.startswith(y + ".")) for x, y in SEAMS)


def test_every_module_has_a_floor():
    assert [m for m in MODS if floor(m) is None] == []


def test_no_upward_import():
    bad = [f"{MODS[a]}:{line} {a} ({FLOORS[floor(a)][0]}) imports {b} ({FLOORS[floor(b)][0]})"
           for a, b, line, _, _ in IMPORTS if floor(b) > floor(a) and not _seam(a, b)]
    assert bad == [], "upward imports (DESIGN §2):\n" + "\n".join(bad)


def test_the_tensor_seam_is_the_last_statements_of_tensor_py():
    tree = ast.parse(open(MODS["tgrad.tensor"]).read())
    last_def = max(n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
    seam = [line for a, b, line, _, _ in IMPORTS if a == "tgrad.tensor" and _seam(a, b)]
    assert seam and min(seam) > last_def


def _graph(drop_seams=True):
    """importer -> imported modules, with each package whose module is imported (Python runs its
    ``__init__``) unless the importer sits inside it (a package may import its own submodules)."""
    edges = {m: set() for m in MODS}
    for a, b, _, _, _ in IMPORTS:
        if drop_seams and _seam(a, b):
            continue
        parts = b.split(".")
        for i in range(1, len(parts) + 1):
            t = ".".join(parts[:i])
            if t in MODS and t != "tgrad" and t != a and not a.startswith(t + "."):
                edges[a].add(t)
    return edges


def circles(edges):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_circle_outside_the_seams():
    assert circles(_graph()) == []


def test_at_most_five_function_level_imports_in_the_core_each_naming_its_cycle():
    lazy = [(MODS[a], line, src.strip()) for a, b, line, in_def, src in IMPORTS
            if in_def and a.startswith(CORE)]
    assert len(lazy) <= 5, lazy
    assert [x for x in lazy if "cycle" not in x[2]] == []


@pytest.mark.parametrize("package", ["tgrad.memory", "tgrad.kernels"])
def test_floor_imports_alone(package):
    """Import ``package`` (every module of it) under an empty ``tgrad`` package: nothing above it loads."""
    code = f"""
import importlib, pkgutil, sys, types
root = types.ModuleType("tgrad"); root.__path__ = [{ROOT!r}]; sys.modules["tgrad"] = root
pkg = importlib.import_module({package!r})
for m in pkgutil.walk_packages(pkg.__path__, {package!r} + "."):
    importlib.import_module(m.name)
if {package!r} == "tgrad.memory":
    from tgrad.device import device
    st = pkg.Storage(64, device("cpu"))
    assert st.nbytes == 64 and pkg.memory_allocated("cpu") >= 64
print(sorted(m for m in sys.modules if m.startswith("tgrad")))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(ROOT)))
    assert r.returncode == 0, r.stderr
    loaded = eval(r.stdout.strip().splitlines()[-1])
    above = [m for m in loaded if m != "tgrad" and floor(m) > floor(package)]
    assert above == []
    assert package + ".allocator" in loaded or package + ".runtime.launcher" in loaded
