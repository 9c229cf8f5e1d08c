"""Long differential fuzz campaign over the op table (issue 16): ``python benchmarks/fuzz_ops.py [N] [seed]``.

Draws N cases (default 10,000) with the strategy of ``tests/test_fuzz_ops.py`` and runs each on cpu,
counting mismatches (wrong values or shapes, a missing or unexpected error) instead of stopping at the
first; prints cases per family, the number of distinct ops and dtypes, every mismatch, and the time.
"""
import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

import test_fuzz_ops  # noqa: E402
from tgrad.testing.opinfos import autograd, elementwise, linalg, nn, optim, reduce, shape  # noqa: E402

FAMILY = {o.name: fam.__name__.rsplit(".", 1)[1]
          for fam in (elementwise, reduce, shape, linalg, nn, optim, autograd) for o in fam.OPS}


def main(n=10_000, run_seed=0):
    stats = collections.Counter()
    ops, dtypes, kinds = set(), set(), collections.Counter()
    mismatches = []

    @seed(run_seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=test_fuzz_ops.cases())
    def run(case):
        opinfo, dtype = case[0], case[1]
        stats[FAMILY[opinfo.name]] += 1
        ops.add(opinfo.name)
        dtypes.add(dtype.name)
        kinds[case[6]] += 1
        try:
            test_fuzz_ops.check_case(case, "cpu")
        except Exception as e:      # noqa: BLE001 - a mismatch of any kind is counted and shown
            mismatches.append((opinfo.name, dtype.name, type(e).__name__, str(e).splitlines()[:6]))

    t0 = time.time()
    run()
    total = sum(stats.values())
    print(f"{total} cases in {time.time() - t0:.0f} s over {len(ops)} OpInfos, {len(dtypes)} dtypes; "
          f"by family {dict(stats)}; by kind {dict(kinds)}")
    print(f"{len(mismatches)} mismatches")
    for m in mismatches:
        print("  ", m)
    return len(mismatches)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    sys.exit(1 if main(*args) else 0)
