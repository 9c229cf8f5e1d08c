"""tgrad's C sources built on first use: the system C compiler through Triton's build cache
(``triton.runtime.build``), none under ``TGRAD_NATIVE=0``; without a compiler each caller's Python path runs
(the same results, slower)."""
import os
import warnings


def build(path, module, what, fallback, **kwargs):
    """The extension module ``module`` built from the C file ``path`` (``kwargs``: ``include_dirs``,
    ``libraries``, ``ccflags``), or None: ``TGRAD_NATIVE=0``, or no compiler (a warning names ``what`` and the
    ``fallback`` that runs instead)."""
    if os.environ.get("TGRAD_NATIVE", "1") == "0":
        return None
    try:
        from triton.runtime.build import compile_module_from_file     # (not at import: tgrad.memory loads alone)
        return compile_module_from_file(path, module, **kwargs)
    except Exception as e:      # no compiler, no headers
        warnings.warn(f"tgrad: building the native {what} failed ({type(e).__name__}: {e}); {fallback}",
                      RuntimeWarning, stacklevel=4)
        return None
