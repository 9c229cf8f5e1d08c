"""python -m tgrad.bench on tiny sizes: rows, columns, times, GB/s = bytes / time, output files."""
import csv
import json
import math
import sys

import pytest

from tgrad import bench


def _check(row):
    assert set(row) == set(bench.COLUMNS)
    assert row["median_ms"] > 0 and row["min_ms"] > 0 and row["iqr_ms"] >= 0
    assert row["min_ms"] <= row["median_ms"]
    sec = row["median_ms"] / 1e3
    assert math.isclose(row["gbps"], row["bytes"] / sec / 1e9, rel_tol=1e-9)
    assert math.isclose(row["gflops"], row["flops"] / sec / 1e9, rel_tol=1e-9)


def test_every_op_on_cpu_with_numpy():
    rows = bench.run(sizes=[16], dtypes=["float32"], devices=["cpu"], repeat=3, warmup=1, numpy=True,
                     log=pytest.fail)
    assert [(r["op"], r["impl"]) for r in rows] == [(op, impl) for op in bench.OPS for impl in ("tgrad", "numpy")]
    for r in rows:
        _check(r)
        assert r["repeat"] == 3 and r["size"] == 16 and r["device"] == "cpu"
    by = {(r["op"], r["impl"]): r for r in rows}
    assert by["matmul", "tgrad"]["shape"] == "4x4" and by["matmul", "tgrad"]["flops"] == 2 * 4 ** 3
    assert by["elementwise", "tgrad"]["bytes"] == 3 * 16 * 4


def test_geometry():
    assert bench.geometry("softmax", 4096, "float16") == ((4, 1024), 2 * 4096 * 2, 5 * 4096)
    assert bench.geometry("optimizer", 10, "float64") == ((10,), 5 * 10 * 8, 40)
    with pytest.raises(ValueError, match="unknown op"):
        bench.geometry("conv", 10, "float32")


def test_cli_writes_csv_json_and_plot(tmp_path, capsys):
    out_csv, out_json, out_png = tmp_path / "b.csv", tmp_path / "b.json", tmp_path / "b.png"
    rows = bench.main(["--ops", "elementwise,reduction", "--sizes", "8,32", "--dtypes", "float32,float16",
                       "--devices", "cpu", "--repeat", "2", "--warmup", "1", "--csv", str(out_csv),
                       "--json", str(out_json), "--plot", str(out_png)])
    assert len(rows) == 2 * 2 * 2
    printed = capsys.readouterr().out
    assert "GB/s" in printed and "elementwise" in printed
    with open(out_csv) as f:
        got = list(csv.DictReader(f))
    assert len(got) == 8 and tuple(got[0]) == bench.COLUMNS
    assert all(float(r["median_ms"]) > 0 for r in got)
    assert json.loads(out_json.read_text()) == rows
    pytest.importorskip("matplotlib")
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_torch_unavailable_is_reported():
    logged = []
    rows = bench.run(ops=["elementwise"], sizes=[8], devices=["cpu"], repeat=1, warmup=0, torch=True,
                     torch_python=sys.executable if _no_torch(sys.executable) else "/nonexistent/python",
                     log=logged.append)
    assert [r["impl"] for r in rows] == ["tgrad"]
    assert any("PyTorch reference unavailable" in m for m in logged)


def _no_torch(py):
    import subprocess
    return subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0


def test_bad_arguments():
    with pytest.raises(SystemExit):
        bench.main(["--ops", "conv"])
    with pytest.raises(SystemExit):
        bench.main(["--dtypes", "int7"])


def test_steps_table_and_plot_with_peers(tmp_path):
    """The steps table's ratios are over PyTorch eager's better thread count, peers (torch.compile, jax.jit)
    get a column where measured and a dash where not; the plot is written."""
    res = {("a", "tgrad"): 2.0, ("a", "compiled"): 0.5, ("a", "torch1"): 1.0, ("a", "torch2"): 4.0,
           ("a", "torchc"): 3.0, ("a", "jax"): 0.25, ("a", "record"): 20.0, ("a", "eager2"): 10.0,
           ("f", "tgrad"): 9.0, ("f", "compiled"): 6.0, ("f", "torch1"): 5.0, ("f", "torch2"): 3.0,
           ("f", "record"): 90.0, ("f", "eager2"): 45.0}
    out = bench.format_steps(res, ["a", "f"]).splitlines()
    assert "torch.compile" in out[0] and "jax.jit" in out[0]
    a, f = out[2].split(), out[3].split()
    assert "2.00x" in a and "0.50x" in a and "3.000" in a and "3.00x" in a and "0.25x" in a and "10.0x" in a
    assert "3.00x" in f and "2.00x" in f and f.count("-") == 4          # (f): no peers measured
    pytest.importorskip("matplotlib")
    bench.plot_steps(res, ["a", "f"], str(tmp_path / "steps.png"))
    assert (tmp_path / "steps.png").stat().st_size > 1000
