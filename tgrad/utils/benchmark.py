"""``tgrad.utils.benchmark``: PyTorch's ``torch.utils.benchmark`` for timing tgrad code.

``Timer(stmt, setup, globals=..., label=, sub_label=, description=, num_threads=)`` runs ``stmt`` with
``timeit`` (``torch`` / ``tgrad`` are in its globals) and returns a ``Measurement`` (median, mean, IQR,
significant figures, PyTorch's text form); ``Compare(measurements).print()`` lays them out as PyTorch's
table (rows: sub_label, columns: description, one block per label and thread count).  On cuda every time
read waits for the device (``tgrad.cuda.synchronize``), so kernel time is counted, not launch time.
"""
import collections
import contextlib
import math
import sys
import textwrap
import timeit

import numpy as np

from .. import cuda as _cuda
from .. import dtypes as _D
from .._creation import tensor as _tensor
from .. import threads as _threads

__all__ = ["Compare", "Measurement", "TaskSpec", "Timer", "select_unit"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def _indent(s):
    return textwrap.indent(s, "  ")


class TaskSpec:
    """What a Timer measures (all but its globals): statements, labels, thread count."""

    FIELDS = ("stmt", "setup", "global_setup", "label", "sub_label", "description", "env", "num_threads")

    def __init__(self, stmt, setup, global_setup="", label=None, sub_label=None, description=None, env=None,
                 num_threads=1):
        self.stmt, self.setup, self.global_setup = stmt, setup, global_setup
        self.label, self.sub_label, self.description, self.env = label, sub_label, description, env
        self.num_threads = num_threads

    def _key(self):
        return tuple(getattr(self, f) for f in self.FIELDS)

    def __eq__(self, other):
        return isinstance(other, TaskSpec) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    @property
    def title(self):
        sub = self.sub_label
        if self.label is not None:
            return self.label + (f": {sub}" if sub else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {sub}" if sub else "")
        return f"stmt:{f' ({sub})' if sub else ''}\n{_indent(self.stmt)}"

    def setup_str(self):
        if self.setup in ("pass", ""):
            return ""
        return f"setup:\n{_indent(self.setup)}" if "\n" in self.setup else f"setup: {self.setup}"

    def summarize(self):
        parts = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{p}\n" if "\n" in p else p for p in parts if p)


class Measurement:
    """One or more timings of a statement: ``raw_times`` (seconds per block of ``number_per_run`` runs)."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run, self.raw_times = number_per_run, list(raw_times)
        self.task_spec, self.metadata = task_spec, metadata
        self._sorted = ()
        self._warnings = ()

    def __getattr__(self, name):
        if name in TaskSpec.FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        """Seconds per run of each measurement."""
        return [t / self.number_per_run for t in self.raw_times]

    def _stats(self):
        if self.raw_times and not self._sorted:
            self._sorted = tuple(sorted(self.times))
            s = _tensor(self._sorted, dtype=_D.float64)          # statistics as PyTorch takes them: float64 tensors
            self._median, self._mean = s.quantile(.5).item(), s.mean().item()
            self._p25, self._p75 = s.quantile(.25).item(), s.quantile(.75).item()
            rel = (self._p75 - self._p25) / self._median
            msg = ("This suggests significant environmental influence." if rel >= _IQR_GROSS_WARN_THRESHOLD else
                   "This could indicate system fluctuation." if rel >= _IQR_WARN_THRESHOLD else None)
            if msg:
                self._warnings = (f"  WARNING: Interquartile range is {rel * 100:.1f}% of the median measurement.\n"
                                  f"           {msg}",)

    @property
    def median(self):
        self._stats()
        return self._median

    @property
    def mean(self):
        self._stats()
        return self._mean

    @property
    def iqr(self):
        self._stats()
        return self._p75 - self._p25

    @property
    def has_warnings(self):
        self._stats()
        return bool(self._warnings)

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def significant_figures(self):
        """Digits the interquartile spread supports (1 to 4): log10(median / (1.645 std / sqrt(n)))."""
        self._stats()
        n = len(self._sorted)
        mid = self._sorted[n // 4:int(math.ceil(3 * n / 4))]
        ci = max(1.645 * _tensor(mid).std(unbiased=False).item() / math.sqrt(len(mid)), _MIN_CONFIDENCE_INTERVAL)
        return min(max(int(math.floor(math.log10(self._median / ci))), 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        self._stats()
        n = len(self._sorted)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = self.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements):
        """Replicates of the same task merged into one Measurement each (times per run, number_per_run 1)."""
        groups = collections.OrderedDict()
        for m in measurements:
            groups.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]


def select_unit(t):
    """(unit, seconds per unit) making ``t`` (seconds) read as 1-999."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def trim_sigfig(x, n):
    """``x`` rounded to ``n`` significant figures."""
    scale = 10 ** (int(math.ceil(math.log10(abs(x)))) - n)
    return float(np.round(x / scale) * scale)


def _synchronized_timer():
    if _cuda.is_available():
        _cuda.synchronize()
    return timeit.default_timer()


class Timer:
    """Times ``stmt`` (a string, run with ``globals``; ``setup`` runs first) like ``timeit.Timer``."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=None, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language="python"):
        if language not in ("python", "py"):
            raise ValueError(f"Timer: language {language!r} is not supported (tgrad times Python statements)")
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        tgrad = sys.modules[__name__.split(".")[0]]     # the package (imported already): stmts say torch.X
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", tgrad)
        self._globals.setdefault("tgrad", tgrad)
        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt.startswith("\n") else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup.startswith("\n") else setup).rstrip()
        if global_setup:
            exec(global_setup, self._globals)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer or _synchronized_timer,
                                   globals=self._globals)
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description, env, num_threads)

    @contextlib.contextmanager
    def _threads(self):
        """tgrad.set_num_threads(num_threads) while timing, restored after."""
        prior = _threads.get_num_threads()
        _threads.set_num_threads(self._task_spec.num_threads)
        try:
            yield
        finally:
            _threads.set_num_threads(prior)

    def timeit(self, number=1000000):
        """One Measurement of ``number`` runs (after number // 100 warm-up runs)."""
        with self._threads():
            self._timer.timeit(number=max(int(number // 100), 1))
            return Measurement(number, [self._timer.timeit(number=number)], self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time):
        """Runs per block: 10x more until the timer's own overhead is below 1e-4 of a block."""
        overhead = float(np.median([self._timer.timeit(0) for _ in range(5)]))
        number = 1
        while True:
            took = self._timer.timeit(number)
            if (overhead / took <= 1e-4 and took >= min_run_time / 1000) or took > min_run_time:
                return number
            number *= 10

    def _loop(self, number, stop, min_run_time, max_run_time=None, callback=None):
        total, times, can_stop = 0.0, [], False
        while total < min_run_time or not can_stop:
            t = self._timer.timeit(number)
            times.append(t)
            total += t
            if callback:
                callback(number, t)
            can_stop = stop(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of runs until ``min_run_time`` seconds are spent; one measurement per block."""
        with self._threads():
            number = self._block_size(min_run_time)
            times = self._loop(number, lambda ts: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """Blocks of runs until the IQR is below ``threshold`` of the median (or ``max_run_time``)."""
        with self._threads():
            number = self._block_size(0.05)

            def stop(ts):
                return len(ts) > 3 and Measurement(number, ts, self._task_spec).meets_confidence(threshold)
            times = self._loop(number, stop, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)


class Compare:
    """Measurements as PyTorch's table: one block per label, rows (num_threads, sub_label), columns description."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim, self._colorize, self._highlight = False, None, False

    def extend_results(self, results):
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise=False):
        self._colorize = "rowwise" if rowwise else "columnwise"

    def highlight_warnings(self):
        self._highlight = True

    def __str__(self):
        groups = collections.OrderedDict()
        for m in Measurement.merge(self._results):
            groups.setdefault(m.label, []).append(m)
        return "\n".join(self._table(ms) for ms in groups.values())

    def print(self):
        print(str(self))

    def _table(self, ms):
        unit, scale = select_unit(min(m.median for m in ms))
        rows = list(collections.OrderedDict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in ms))
        rows.sort(key=lambda k: k[:2])
        cols = list(collections.OrderedDict.fromkeys(m.description for m in ms))
        grid = {((m.num_threads, m.env, m.as_row_name), m.description): m for m in ms}
        render_env = len({m.env for m in ms}) > 1
        env_len = max(len(m.env) for m in ms) if render_env else 0
        highlight = self._highlight and any(m.has_warnings for m in ms)
        templates = []
        for c in cols:
            col_ms = [grid[r, c] for r in rows if (r, c) in grid]
            digits = [int(math.ceil(math.log10(m.median / scale))) for m in col_ms]
            decimals = min(max(m.significant_figures - d, 0) for d, m in zip(digits, col_ms)) if self._trim else 1
            width = max(digits) + decimals + (1 if decimals else 0)
            templates.append((width, decimals, self._highlight and any(m.has_warnings for m in col_ms)))

        def cell(m, tpl):
            width, decimals, marks = tpl
            if m is None:
                return " " * (width + (7 if marks else 0))
            v = m.median / scale
            if self._trim:
                v = trim_sigfig(v, m.significant_figures)
            s = f"{v:>{width}.{decimals}f}"
            if marks:
                s += f"{f' (! {m.iqr / m.median * 100:.0f}%)' if m.has_warnings else '':>7}"
            return s
        strings = [[""] + [str(c) if c is not None else "None" for c in cols]]
        prev_env = ""
        for r in rows:
            env = f"({r[1]})" if render_env and r[1] != prev_env else ""
            prev_env = r[1]
            strings.append(["  " + env.ljust(env_len + 4) + r[2]] + [cell(grid.get((r, c)), t)
                                                                    for c, t in zip(cols, templates)])
        widths = [max(len(s[i]) for s in strings) for i in range(len(strings[0]))]
        lines = ["  |  ".join(s.center(w) for s, w in zip(strings[0], widths))]
        overall = len(lines[0])
        prev_threads = None
        for r, s in zip(rows, strings[1:]):
            if r[0] != prev_threads:
                lines.append(f"{r[0]} threads: ".ljust(overall, "-"))
                prev_threads = r[0]
            row = [s[0].ljust(widths[0])]
            for i, (txt, w) in enumerate(zip(s[1:], widths[1:])):
                txt = txt.center(w)
                m = grid.get((r, cols[i]))
                if self._colorize and m is not None:
                    best = (min(x.median for c in cols for x in [grid.get((r, c))] if x) if self._colorize == "rowwise"
                            else min(x.median for rr in rows if rr[0] == r[0] for x in [grid.get((rr, cols[i]))] if x))
                    txt = _color(txt, m.median, best)
                row.append(txt)
            lines.append("  |  ".join(row))
        label = ms[0].label
        english = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[unit]
        note = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if highlight else ""
        return (f"[{(' ' + (label or '') + ' ').center(overall - 2, '-')}]\n" + "\n".join(lines)
                + f"\n\nTimes are in {english}s ({unit}).\n{note}")


def _color(segment, value, best):
    """ANSI colours as PyTorch's Compare.colorize: green best, blue within 10%, red 2x / 5x slower."""
    end = "\033[0m" * 2
    if value <= best * 1.01 or value <= best + 100e-9:
        return "\033[92m\033[1m" + segment + end
    if value <= best * 1.1:
        return "\033[34m\033[1m" + segment + end
    if value >= best * 5:
        return "\033[31m\033[1m" + segment + end
    if value >= best * 2:
        return "\033[2m\033[91m" + segment + end
    return segment
