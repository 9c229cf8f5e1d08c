"""Kernel launch counting: how many kernels each op and each training step launches.

    with tgrad.profiler.profile() as prof:
        for x, y in batches:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    print(prof.table())
    print(prof.launches_per_step)

Every launch through ``tgrad.kernels.runtime.launch`` is counted under its
kernel name and under the op-table op being run (the outermost one: an op
whose forward calls other ops is charged for their launches; a backward
rule is charged as ``"<op>.backward"``). Launches outside any op are counted
under ``"<no op>"``. Profiles may nest; each counts what ran inside it.
"""
import collections

from .autograd import dispatch as _dispatch
from .kernels.runtime import launcher

NO_OP = "<no op>"
_active = []  # running profiles, outermost first


def _on_launch(kernel_name):
    launcher.LaunchCounter.add(launcher.COUNTER, kernel_name)  # what COUNTER.enabled users read
    op = _dispatch.current_op() or NO_OP
    for prof in _active:
        prof._add(op, kernel_name)


class profile:
    """Context manager counting kernel launches per kernel, per op and per ``step()``."""

    def __init__(self):
        self.by_op_kernel = collections.Counter()  # (op, kernel) -> launches
        self.launches_per_step = []                # launches of each step closed by step()
        self.total_launches = 0
        self._step_start = 0
        self._saved = None

    def __enter__(self):
        if not _active:
            self._saved = launcher.COUNTER.enabled
            launcher.COUNTER.enabled = True
            launcher.COUNTER.add = _on_launch
            _dispatch.PROFILING = True
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)
        if not _active:
            del launcher.COUNTER.add  # back to LaunchCounter.add
            launcher.COUNTER.enabled = self._saved
            _dispatch.PROFILING = False
        return False

    def _add(self, op, kernel):
        self.by_op_kernel[op, kernel] += 1
        self.total_launches += 1

    def step(self):
        """End a training step: its launch count is appended to ``launches_per_step``."""
        self.launches_per_step.append(self.total_launches - self._step_start)
        self._step_start = self.total_launches

    @property
    def launches_by_op(self):
        """{op name: launches}, most launches first."""
        c = collections.Counter()
        for (op, _), n in self.by_op_kernel.items():
            c[op] += n
        return dict(c.most_common())

    @property
    def launches_by_kernel(self):
        """{kernel name: launches}, most launches first."""
        c = collections.Counter()
        for (_, kernel), n in self.by_op_kernel.items():
            c[kernel] += n
        return dict(c.most_common())

    def table(self):
        """A text table: one row per (op, kernel) with launches, and per step if steps were marked."""
        steps = len(self.launches_per_step)
        rows = sorted(self.by_op_kernel.items(), key=lambda kv: (-kv[1], kv[0]))
        w_op = max([len("op")] + [len(op) for (op, _), _ in rows])
        w_k = max([len("kernel")] + [len(k) for (_, k), _ in rows])
        head = f"{'op':<{w_op}}  {'kernel':<{w_k}}  {'launches':>8}"
        if steps:
            head += f"  {'per step':>8}"
        lines = [head, "-" * len(head)]
        for (op, kernel), n in rows:
            line = f"{op:<{w_op}}  {kernel:<{w_k}}  {n:>8}"
            if steps:
                line += f"  {n / steps:>8.2f}"
            lines.append(line)
        lines.append("-" * len(head))
        total = f"{'total':<{w_op}}  {'':<{w_k}}  {self.total_launches:>8}"
        if steps:
            total += f"  {self.total_launches / steps:>8.2f}"
        lines.append(total)
        if steps:
            lines.append(f"steps: {steps}, launches per step: {self.launches_per_step}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<tgrad.profiler.profile: {self.total_launches} launches>"
