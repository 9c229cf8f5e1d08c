"""``tgrad.jit``: PyTorch's TorchScript entry points, run eagerly.

tgrad has no TorchScript compiler: ``script`` and ``trace`` return the function itself, or a module of class
``RecursiveScriptModule`` (a subclass of the model's class and of ``ScriptModule``) that shares the model's
parameters, buffers and submodules, so a program that scripts its model trains and prints the same numbers.
``save``/``load`` pickle the whole module (``tgrad.save``).  For captured, replayed steps use ``tgrad.compile``.
"""
import contextlib
import copy

from . import serialization as _serialization


class ScriptModule:
    """Marker base of scripted/traced modules (``isinstance(m, torch.jit.ScriptModule)``)."""


class ScriptFunction:
    """Marker base of scripted functions."""


class TracerWarning(Warning):
    pass


def _is_module(obj):
    return hasattr(obj, "_parameters") and hasattr(obj, "forward")


def _scripted(module):
    if isinstance(module, ScriptModule):
        return module
    out = copy.copy(module)          # shallow: the same parameter, buffer and submodule dicts
    out.__class__ = type("RecursiveScriptModule", (type(module), ScriptModule), {"_eager_class": type(module)})
    return out


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """The module (as a ``RecursiveScriptModule`` sharing its state) or the function itself, run eagerly."""
    return _scripted(obj) if _is_module(obj) else obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """As ``script``: the module or function, run eagerly (data-dependent control flow stays dynamic)."""
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided")
    return _scripted(func) if _is_module(func) else func


def trace_module(mod, inputs, *args, **kwargs):
    return _scripted(mod)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() on "
                           "your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


def save(m, f, _extra_files=None):
    """Pickle the module (as its own class) with ``tgrad.save``."""
    obj = copy.copy(m)
    obj.__class__ = getattr(m, "_eager_class", type(m))
    _serialization.save(obj, f)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """A module saved by ``save``, scripted again."""
    return _scripted(_serialization.load(f, map_location=map_location, weights_only=False))


def ignore(drop=False, **kwargs):
    """Decorator leaving a function to Python (everything is Python here)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def interface(obj):
    return obj


def annotate(the_type, the_value):
    return the_value


def is_scripting():
    return False


def is_tracing():
    return False


@contextlib.contextmanager
def optimized_execution(should_optimize):
    yield


@contextlib.contextmanager
def fuser(name):
    yield
