"""Writes one TensorBoard log with every kind of SummaryWriter record, from numpy inputs, and prints each record
(wall times zeroed) as hex. Run by tests/utils/test_tensorboard.py with tgrad as torch, and by
``/work/venv-torch/bin/python tests/data/tensorboard_prog.py OUT > tests/data/tensorboard_torch.txt``
(PyTorch 2.13, tensorboard 2.21) for the reference: the two must print the same lines."""
import os
import sys

import numpy as np


def write(torch, out):
    from torch.utils.tensorboard import SummaryWriter   # tgrad.utils.tensorboard under tgrad
    rng = np.random.default_rng(0)
    t = lambda a: torch.tensor(a)   # noqa: E731
    w = SummaryWriter(log_dir=out, purge_step=3)
    for step in range(3):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("loss_t", t(np.float32(0.5 * step)), step, new_style=True)
        w.add_scalar("loss_d", 0.1 * step, step, new_style=True, double_precision=True)
        w.add_scalars("run", {"a": step, "b": t(np.float32(2.0 * step))}, step)
    x = t(rng.normal(size=(1000,)).astype(np.float32))
    w.add_histogram("h", x, 0)
    w.add_histogram("h2", x, 1, bins="auto", max_bins=10)
    w.add_histogram("h3", t(np.arange(10)), 2, bins=5)
    w.add_histogram_raw("raw", 0, 10, 3, 12, 50, [1, 5, 10], [1, 1, 1], 0)
    w.add_image("img", t(rng.uniform(size=(3, 8, 6)).astype(np.float32)), 0)
    w.add_images("imgs", t(rng.uniform(size=(5, 1, 4, 4)).astype(np.float32)), 0)
    w.add_image("hw", t(rng.integers(0, 255, (5, 7)).astype(np.uint8)), 0, dataformats="HW")
    w.add_image("hwc", rng.uniform(size=(4, 3, 1)).astype(np.float32), 0, dataformats="HWC")
    w.add_text("note", "hello **world**", 0)
    w.add_audio("snd", t(np.sin(np.arange(100) / 5).astype(np.float32)), 0, sample_rate=8000)
    labels, preds = t(rng.integers(0, 2, 50)), t(rng.uniform(size=50).astype(np.float32))
    w.add_pr_curve("pr", labels, preds, 0)
    w.add_pr_curve("pr2", labels, preds, 1, num_thresholds=10)
    w.add_custom_scalars({"cat": {"c1": ["Multiline", ["loss", "loss_t"]], "c2": ["Margin", ["a", "b", "c"]]}})
    w.add_custom_scalars_multilinechart(["loss"])
    w.add_custom_scalars_marginchart(["a", "b", "c"], category="m")
    w.add_tensor("t", t(rng.normal(size=(2, 3)).astype(np.float32)), 0)
    w.add_tensor("ti", t(np.arange(6).reshape(2, 3)), 0)
    w.add_hparams({"lr": 0.1}, {"hparam/acc": 0.9}, run_name="hp")
    w.add_embedding(t(rng.normal(size=(4, 3)).astype(np.float32)), metadata=["a", "b", "c", "d"], tag="emb")
    w.add_embedding(t(rng.normal(size=(2, 2)).astype(np.float32)), metadata=[["x", 1], ["y", 2]],
                    metadata_header=["name", "n"], global_step=5, tag="with/header",
                    label_img=t(rng.uniform(size=(2, 3, 4, 4)).astype(np.float32)))
    w.close()


def dump(out):
    """Each record of each event file (wall time 0) as hex, then each other file's bytes, in path order."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    lines = []
    for root, dirs, files in sorted(os.walk(out)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            rel = os.path.relpath(os.path.dirname(p), out)
            if "tfevents" in f:
                for e in EventFileLoader(p).Load():
                    e.wall_time = 0
                    lines.append(f"{rel} {e.SerializeToString().hex()}")
            else:
                with open(p, "rb") as fh:
                    lines.append(f"{rel}/{f} {fh.read().hex()}")
    return lines


if __name__ == "__main__":
    import torch
    write(torch, sys.argv[1])
    print("\n".join(dump(sys.argv[1])))
