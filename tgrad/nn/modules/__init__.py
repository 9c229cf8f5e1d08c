"""Layers and losses (``tgrad.nn.Linear``, ``tgrad.nn.CrossEntropyLoss`` ...)."""
from .container import ModuleDict, ModuleList, Sequential  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .module import Module  # noqa: F401
