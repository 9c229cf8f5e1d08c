"""``torch.compiler``: the controls programs call around ``tgrad.compile``."""
from ._compile import compile, config, disable, is_compiling, reset  # noqa: F401

is_dynamo_compiling = is_compiling


def allow_in_graph(fn):
    """``fn`` unchanged: tgrad's capture records whatever a step runs."""
    return fn
