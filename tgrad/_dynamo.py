"""``torch._dynamo``: the names of it that programs call (``reset``, ``config.cache_size_limit``, ``disable``)."""
from ._compile import config, disable, is_compiling, reset  # noqa: F401
from .compiler import allow_in_graph  # noqa: F401


def mark_dynamic(t, index, **kwargs):
    """No effect: tgrad records one replay per shape (guards), so a dynamic dimension needs no mark."""
