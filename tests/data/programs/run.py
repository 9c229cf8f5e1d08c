"""Run the program corpus: each NAME.py under tgrad (torch mapped to tgrad) and diff its stdout against
NAME.torch.txt, what PyTorch 2.13 (CPU) printed.  --torch PY regenerates the .torch.txt files with PY.

    PYTHONPATH=<repo> python tests/data/programs/run.py [names...]
    python tests/data/programs/run.py --torch /path/to/torch/python [names...]
"""
import difflib, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ALIAS = r'''
import importlib, importlib.abc, importlib.util, runpy, sys
class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)
    def create_module(self, spec):
        mod = importlib.import_module("tgrad" + spec.name[len("torch"):])
        sys.modules[spec.name] = mod
        return mod
    def exec_module(self, module):
        pass
sys.meta_path.insert(0, _Alias())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def main(argv):
    torch_py = None
    if argv[:1] == ["--torch"]:
        torch_py, argv = argv[1], argv[2:]
    names = argv or sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py") and f != "run.py")
    bad = 0
    for name in names:
        prog = os.path.join(HERE, name + ".py")
        cmd = [torch_py, prog] if torch_py else [sys.executable, "-c", ALIAS, prog]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE, timeout=900)
        ref = os.path.join(HERE, name + ".torch.txt")
        if torch_py:
            with open(ref, "w") as f:
                f.write(r.stdout)
            print(name, "rc", r.returncode)
            continue
        want = open(ref).read()
        r.stdout = r.stdout.replace("tgrad.", "torch.")    # tgrad.Size, tgrad.float64, tgrad.return_types...
        if r.returncode:
            bad += 1
            print(f"{name}: CRASH\n{r.stderr[-2000:]}")
        elif r.stdout != want:
            bad += 1
            print(f"{name}: DIFFER")
            sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), r.stdout.splitlines(True), "torch", "tgrad"))
        else:
            print(f"{name}: identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
