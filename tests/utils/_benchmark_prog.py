import re
import torch
import torch.utils.benchmark as benchmark
from torch.utils.benchmark import Measurement, Compare, TaskSpec
def show(m): print(re.sub(" at 0x[0-9a-f]+", "", repr(m)).replace("utils.common.", ""))
a = TaskSpec(stmt="x + y", setup="pass", label="add", sub_label="1000", description="float")
b = TaskSpec(stmt="x * y", setup="x = 1", label="add", sub_label="1000", description="mul")
c = TaskSpec(stmt="x + y", setup="pass", label="add", sub_label="64", description="float", num_threads=2)
d = TaskSpec(stmt="for i in range(3):\n    pass", setup="a = 1\nb = 2")
m1 = Measurement(10, [0.001, 0.0011, 0.0009, 0.00105, 0.00102], a)
m2 = Measurement(100, [2.5e-3, 2.6e-3, 2.4e-3, 3.5e-3], b)
m3 = Measurement(1, [7e-5], c)
m4 = Measurement(1000, [0.5, 0.52], d)
for m in (m1, m2, m3, m4): show(m); print(m.median, m.mean, m.iqr, m.significant_figures, m.has_warnings, m.times[:2])
Compare([m1, m2, m3]).print()
cp = Compare([m1, m2, m3]); cp.trim_significant_figures(); cp.highlight_warnings(); cp.print()
t = benchmark.Timer(stmt="x.sum()", setup="x = torch.ones(100)", label="L", description="D")
m = t.timeit(20); print(m.number_per_run, len(m.times), m.task_spec.setup)
m = t.blocked_autorange(min_run_time=0.01); print(m.number_per_run >= 1, len(m.times) >= 1)
m = t.adaptive_autorange(min_run_time=0.01, max_run_time=0.2); print(len(m.times) >= 1)
