"""tgrad.utils.benchmark: Measurement statistics and text, Compare's table (as PyTorch 2.13 prints them for the
same measurements), and Timer running statements on the test device."""
import re
import subprocess
import sys
import os

import numpy as np

import tgrad
from tgrad.utils import benchmark

HERE = os.path.dirname(os.path.abspath(__file__))
# tests/utils/_benchmark_prog.py printed by PyTorch 2.13 (object addresses removed); its last lines time real code
PYTORCH = '<torch.utils.benchmark.Measurement object>\nadd: 1000\nfloat\n  Median: 102.00 us\n  IQR:    5.00 us (100.00 to 105.00)\n  5 measurements, 10 runs per measurement, 1 thread\n0.00010200000000000001 0.0001014 4.999999999999986e-06 1 False [0.0001, 0.00011]\n<torch.utils.benchmark.Measurement object>\nadd: 1000\nmul\nsetup: x = 1\n  Median: 25.50 us\n  IQR:    3.50 us (24.75 to 28.25)\n  4 measurements, 100 runs per measurement, 1 thread\n  WARNING: Interquartile range is 13.7% of the median measurement.\n           This could indicate system fluctuation.\n2.55e-05 2.7499999999999998e-05 3.5000000000000004e-06 1 True [2.5e-05, 2.6e-05]\n<torch.utils.benchmark.Measurement object>\nadd: 64\nfloat\n  70.00 us\n  1 measurement, 1 runs , 2 threads\n7e-05 7e-05 0.0 3 False [7e-05]\n<torch.utils.benchmark.Measurement object>\nstmt:\n  for i in range(3):\n      pass\n\nsetup:\n  a = 1\n  b = 2\n\n  Median: 510.00 us\n  2 measurements, 1000 runs per measurement, 1 thread\n0.00051 0.00051 1.0000000000000026e-05 1 False [0.0005, 0.0005200000000000001]\n[----------- add -----------]\n            |  float  |  mul \n1 threads: ------------------\n      1000  |  102.0  |  25.5\n2 threads: ------------------\n      64    |   70.0  |      \n\nTimes are in microseconds (us).\n\n[-------------- add --------------]\n            |  float  |     mul    \n1 threads: ------------------------\n      1000  |   100   |  30 (! 14%)\n2 threads: ------------------------\n      64    |    70   |            \n\nTimes are in microseconds (us).\n(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n\n20 1 x = torch.ones(100)\nTrue True\nTrue\n'


def test_measurements_and_compare_print_as_pytorch():
    """The program runs with ``torch`` aliased to tgrad; all but its last three lines (timings) must match."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(HERE)))
    shim = ("import sys, importlib, importlib.abc, importlib.util, runpy\n"
            "class A(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            return importlib.util.spec_from_loader(name, self)\n"
            "    def create_module(self, spec):\n"
            "        return importlib.import_module('tgrad' + spec.name[5:])\n"
            "    def exec_module(self, module):\n"
            "        pass\n"
            "sys.meta_path.insert(0, A())\n"
            "runpy.run_path(sys.argv[1], run_name='__main__')\n")
    out = subprocess.run([sys.executable, "-c", shim, os.path.join(HERE, "_benchmark_prog.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.replace("tgrad.", "torch.") == PYTORCH


def test_timer_runs_the_statement(device):
    x = tgrad.ones(1000, device=device)
    calls = []
    t = benchmark.Timer("calls.append(1); y = x * 2", globals={"x": x, "calls": calls}, label="mul",
                        description=device)
    m = t.timeit(50)
    assert len(calls) == 50 + 1 and m.number_per_run == 50 and len(m.times) == 1 and m.median > 0
    m = t.blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and m.number_per_run >= 1
    assert "torch" in t._globals and t._globals["torch"] is tgrad
    m = benchmark.Timer("torch.ones(3)").timeit(3)
    assert m.title == "torch.ones(3)"
    try:
        benchmark.Timer(lambda: None)
    except ValueError as e:
        assert "only a `str` stmt" in str(e)
