"""tgrad.autograd.graph.to_dot / draw (issue 16): a loss's backward graph as DOT text, SVG or PNG."""
import re
import shutil
import sys

import pytest

import tgrad
from tgrad import nn
from tgrad.autograd.graph import draw, to_dot


def _nodes(dot):
    """{id: (label, fillcolor)} and [(src, dst)] of a DOT text written by to_dot."""
    nodes = {k: (lab.replace("\\n", "\n"), col) for k, lab, col in re.findall(r'\t(\w+) \[label="(.*?)" fillcolor=(\w+)',
                                                                         dot)}
    edges = re.findall(r"\t(\w+) -> (\w+)", dot)
    return nodes, edges


def test_dot_of_a_small_graph():
    a = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tgrad.tensor([4.0, 5.0, 6.0])
    loss = (a * b).sum()
    dot = to_dot(loss, params={"a": a})
    assert dot.startswith("digraph {") and dot.rstrip().endswith("}")
    nodes, edges = _nodes(dot)
    by_label = {lab: (k, col) for k, (lab, col) in nodes.items()}
    assert by_label["SumBackward0"][1] == by_label["MulBackward0"][1] == "lightgrey"
    assert by_label["a\n (3,)"][1] == "lightblue"                       # the leaf, by name, with its shape
    assert by_label["()"][1] == "darkolivegreen1"                        # the loss itself
    assert by_label["self\n (3,)"][1] == by_label["other\n (3,)"][1] == "orange"   # MulBackward0's saved tensors
    k = {lab: key for lab, (key, _) in by_label.items()}
    assert (k["a\n (3,)"], k["MulBackward0"]) in edges and (k["MulBackward0"], k["SumBackward0"]) in edges
    assert (k["SumBackward0"], k["()"]) in edges and len(nodes) == 6 and len(edges) == 5
    assert "dir=none style=dotted" in dot
    loss.backward()
    assert "(freed)" in to_dot(loss)                                     # saved tensors released by backward


def test_dot_of_a_model_loss_names_parameters():
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    loss = ((model(tgrad.randn(5, 3)) - 1) ** 2).mean()
    nodes, edges = _nodes(to_dot(loss, params=dict(model.named_parameters()), show_saved=False, show_attrs=True))
    labels = sorted(lab for lab, col in nodes.values() if col == "lightblue")
    assert labels == ["0.bias\n (4,)", "0.weight\n (4, 3)", "2.bias\n (1,)", "2.weight\n (1, 4)"]
    assert any(lab.startswith("PowBackward0\nexponent: 2") for lab, _ in nodes.values())
    assert "TanhBackward0" in {lab for lab, _ in nodes.values()}
    assert not any(col == "orange" for _, col in nodes.values())
    # every node but the output feeds something; the graph is connected to the output
    sources = {s for s, _ in edges}
    assert all(k in sources for k, (lab, col) in nodes.items() if col != "darkolivegreen1")


def test_several_roots_and_a_leaf_root():
    x = tgrad.ones(2, requires_grad=True)
    y, z = x * 2, x.exp()
    nodes, edges = _nodes(to_dot([y, z, x]))
    assert sum(col == "darkolivegreen1" for _, col in nodes.values()) == 3
    assert sum(col == "lightblue" for _, col in nodes.values()) == 1      # one leaf node, shared


def test_draw_without_graphviz_says_how(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"pip install 'tgrad\[graph\]'"):
        draw(tgrad.ones(1, requires_grad=True).sum())


def test_draw_svg_and_png(tmp_path):
    graphviz = pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")
    a = tgrad.ones(2, 2, requires_grad=True)
    loss = (a @ a).relu().sum()
    src = draw(loss)
    assert isinstance(src, graphviz.Source) and src.source == to_dot(loss)
    svg = draw(loss, str(tmp_path / "g"), format="svg")
    text = open(svg).read()
    assert svg.endswith("g.svg") and "<svg" in text and "MmBackward0" in text and "ReluBackward0" in text
    png = draw(loss, str(tmp_path / "g"), format="png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
