"""Drawing a backward graph: ``to_dot(loss)`` (DOT text) and ``draw(loss)`` (SVG/PNG via ``graphviz``).

The picture PyTorch users know from torchviz's ``make_dot``: one box per
``grad_fn`` node (grey, its class name, e.g. ``MulBackward0``), the leaves it
accumulates into (blue, the parameter's name when ``params`` names it, and its
shape), the tensors each node saved for backward (orange, ``self``/``other``/
``result`` and shape, dotted edges), and the outputs drawn from (green, shape).
Edges point from inputs to the node that consumes them.
"""


def _shape(t):
    return "(" + ", ".join(map(str, t.shape)) + ("," if len(t.shape) == 1 else "") + ")"


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _roots(roots):
    if isinstance(roots, (list, tuple)):
        return list(roots)
    return [roots]


def to_dot(roots, params=None, show_saved=True, show_attrs=False):
    """DOT text of the graph behind ``roots`` (a tensor or a list of tensors).

    ``params``: {name: tensor} (e.g. ``dict(model.named_parameters())``) to label leaves by name;
    ``show_saved``: draw the tensors saved for backward; ``show_attrs``: list each node's saved
    non-tensor attributes (``dim``, ``alpha`` ...) in its box.
    """
    names = {id(t): n for n, t in (params or {}).items()}
    lines = ["digraph {", '\tgraph [size="12,12"]',
             "\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]"]
    seen = set()

    def node(key, label, color, extra=""):
        lines.append(f"\t{key} [label={_quote(label)} fillcolor={color}{extra}]")

    def edge(a, b, extra=""):
        lines.append(f"\t{a} -> {b}{extra}")

    def visit(fn):
        stack = [fn]
        while stack:
            fn = stack.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            var = getattr(fn, "variable", None)
            if var is not None:             # AccumulateGrad: drawn as its leaf
                name = names.get(id(var), "")
                node(id(fn), f"{name}\n {_shape(var)}" if name else _shape(var), "lightblue")
            else:
                label = type(fn).__name__
                if show_attrs:
                    for k, v in fn.__dict__.get("_attrs", {}).items():
                        label += f"\n{k}: {str(v)[:50]}"
                node(id(fn), label, "lightgrey")
                if show_saved:
                    for k, saved in fn.__dict__.get("_saved", {}).items():
                        try:
                            desc = _shape(saved.unpack())
                        except RuntimeError:        # released by a backward without retain_graph
                            desc = "(freed)"
                        key = f"{id(fn)}_{k}"
                        node(key, f"{k}\n {desc}", "orange")
                        edge(key, id(fn), " [dir=none style=dotted]")
            for nxt, _ in getattr(fn, "next_functions", ()):
                if nxt is not None:
                    edge(id(nxt), id(fn))
                    stack.append(nxt)

    for r in _roots(roots):
        label = _shape(r)
        if id(r) in names:
            label = f"{names[id(r)]}\n {label}"
        node(f"out{id(r)}", label, "darkolivegreen1")
        fn = r.grad_fn
        if fn is not None:
            visit(fn)
            edge(id(fn), f"out{id(r)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(roots, filename=None, format="svg", params=None, show_saved=True, show_attrs=False):
    """The graph as a ``graphviz.Source`` (rendered inline by Jupyter); with ``filename``, also written to
    ``filename.<format>`` (svg, png, pdf ...; needs Graphviz's ``dot`` program) and that path returned.
    Needs the ``graphviz`` package (``pip install tgrad[graph]``); ``to_dot`` needs nothing."""
    try:
        import graphviz
    except ImportError:
        raise ImportError("tgrad.autograd.graph.draw needs the graphviz package (pip install 'tgrad[graph]') and "
                          "Graphviz's dot program; tgrad.autograd.graph.to_dot gives the DOT text without them") \
            from None
    src = graphviz.Source(to_dot(roots, params, show_saved, show_attrs), format=format)
    if filename is None:
        return src
    return src.render(filename, cleanup=True)
