"""pytest-benchmark of the training steps (a)-(e) (benchmarks/steps.py) in tgrad, eager and compiled.

One round is one training step ((d): one epoch; ``test_step_d_run`` times the
1000-epoch run). ``benchmarks/compare_torch.py`` puts the same steps side by
side with PyTorch.
"""
import math

import pytest

import tgrad
from steps import EPOCHS, build

ROUNDS = {"a": 50, "b": 30, "c": 10, "d": 200, "e": 200}


@pytest.mark.parametrize("name", ["a", "b", "c", "d", "e"])
def test_step_compiled(benchmark, name):
    step = tgrad.compile(build(name, tgrad))
    loss = benchmark.pedantic(step, rounds=ROUNDS[name], warmup_rounds=3, iterations=1)
    assert loss.item() == loss.item()


@pytest.mark.parametrize("name", ["a", "b", "c", "d", "e"])
def test_step(benchmark, name):
    step = build(name, tgrad)
    loss = benchmark.pedantic(step, rounds=ROUNDS[name], warmup_rounds=3, iterations=1)
    assert math.isfinite(loss.item())
    with tgrad.profiler.profile() as prof:
        step()
        prof.step()
    benchmark.extra_info["launches_per_step"] = prof.launches_per_step[0]


def test_step_d_run(benchmark):
    step = build("d", tgrad)

    def run():
        for _ in range(EPOCHS):
            step()
    benchmark.pedantic(run, rounds=1, warmup_rounds=0, iterations=1)
    b, w = step.params
    assert abs(b.item() - 1.02) < 0.05 and abs(w.item() - 1.97) < 0.05  # seed 003's fit: b ~ 1.02, w ~ 1.97
