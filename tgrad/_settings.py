"""Process-wide switches PyTorch keeps in ``torch/__init__``: fp32 matmul precision and deterministic algorithms.

tgrad's kernels are deterministic already (no atomics whose order changes a sum), so
``use_deterministic_algorithms`` is kept for programs that set it and changes no result; the matmul
precision is ``backends.cuda.matmul.allow_tf32`` under its newer name ('highest' = exact fp32, 'high' and
'medium' = TF32 on cuda; the interpreter computes exact fp32 either way).
"""
import warnings

from .backends import cuda as _cuda

_deterministic = {"enabled": False, "warn_only": False}


def set_float32_matmul_precision(precision):
    """'highest' (exact fp32), 'high' or 'medium' (TF32 allowed on cuda)."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.")
        return
    _cuda.matmul.allow_tf32 = precision != "highest"
    _cuda.matmul._precision = precision


def get_float32_matmul_precision():
    if not _cuda.matmul.allow_tf32:
        return "highest"
    return getattr(_cuda.matmul, "_precision", "high")


def use_deterministic_algorithms(mode, *, warn_only=False):
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _deterministic["enabled"], _deterministic["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0/'default', 1/'warn', 2/'error' as in PyTorch."""
    names = {"default": 0, "warn": 1, "error": 2}
    mode = names.get(debug_mode, debug_mode)
    if mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(mode > 0, warn_only=mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["enabled"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2
