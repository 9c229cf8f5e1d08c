"""Native helpers of the cpu executor, built on first use with the system C compiler (the one Triton's own
launcher needs) through Triton's build cache, with a numpy fallback where none builds.

- ``fma_ufunc()``: ``fma.c``'s numpy ufunc ``fma(x, y, z)``, x y + z rounded once (float32 and float64,
  broadcasting like any ufunc): the CPU's FMA instruction, else C99 ``fmaf``/``fma``.  An exact fp32 fma
  in numpy alone (``tape_ops._fma32``) costs ~2.3 ns an element; this ~0.3 ns.
"""
import os
import warnings

import numpy as np
from triton.runtime.build import compile_module_from_file

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fma.c")
_built = {}


def fma_ufunc():
    """The fma ufunc, or None when it cannot be built (no C compiler, or ``TGRAD_NATIVE=0``)."""
    try:
        return _built["fma"]
    except KeyError:
        pass
    f = None
    if os.environ.get("TGRAD_NATIVE", "1") != "0":
        try:
            f = compile_module_from_file(_SRC, "tgrad_fma", include_dirs=[np.get_include()], libraries=["m"],
                                         ccflags=["-fno-math-errno"]).fma
        except Exception as e:          # no compiler, no headers: the numpy emulation is exact, only slower
            warnings.warn(f"tgrad: building the native fma failed ({type(e).__name__}: {e}); the cpu executor "
                          "emulates fp32 fma in numpy (slower)", RuntimeWarning, stacklevel=2)
    _built["fma"] = f
    return f
