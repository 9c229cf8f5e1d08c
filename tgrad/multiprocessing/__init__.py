"""``tgrad.multiprocessing``: Python's ``multiprocessing`` (re-exported: Process, Queue, Pool, get_context,
set_start_method, cpu_count ...) plus PyTorch's ``spawn`` / ``start_processes``. tgrad tensors pickle by value
(their data is copied through the queue or pipe, as PyTorch's ``file_system`` strategy minus the sharing)."""
import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403

from .spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,  # noqa: F401
                    SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"] + multiprocessing.__all__

_all_sharing_strategies = {"file_system"} if sys.platform in ("darwin", "win32") else \
    {"file_descriptor", "file_system"}
_sharing_strategy = "file_system" if sys.platform in ("darwin", "win32") else "file_descriptor"


def set_sharing_strategy(new_strategy):
    """Accepted for PyTorch programs (tgrad copies tensors between processes whatever the strategy)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    return _sharing_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies
