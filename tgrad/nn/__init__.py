"""``tgrad.nn``: Module, Parameter, layers, losses, ``functional``, ``init`` and ``utils``."""
from . import functional, init, utils  # noqa: F401
from .modules import Flatten, Identity, Linear, Module, ModuleDict, ModuleList, Sequential, Unflatten  # noqa: F401
from .parameter import Parameter  # noqa: F401
