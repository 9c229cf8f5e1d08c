"""Tensor printing: a numpy port of PyTorch's ``torch/_tensor_str.py``.

``format_tensor(arr, dtype_name=...)`` returns exactly the string PyTorch's
``repr(tensor)`` gives for the same values, dtype, device and autograd
suffixes (with ``dtype=tgrad.<name>`` in place of ``dtype=torch.<name>``).
Print options (``set_printoptions`` / ``get_printoptions`` / ``printoptions``)
follow PyTorch's defaults and profiles.

The algorithm mirrors PyTorch's step by step (``_Formatter``, ``_vector_str``,
``_tensor_str_with_formatter``, ``get_summarized_data``, ``_add_suffixes``,
``_str_intern``), quirks included, so that the output matches byte for byte.
Values are formatted as Python floats/ints/bools, as ``Tensor.tolist()`` and
``Tensor.item()`` produce them in PyTorch; float16/bfloat16/float32 values are
widened exactly to float64 first.
"""
import contextlib
import dataclasses
import math
from typing import Any

import numpy as np

__all__ = ["format_tensor", "set_printoptions", "get_printoptions", "printoptions", "PRINT_OPTS"]

# What precedes a dtype name in the ``dtype=...`` suffix.
DTYPE_PREFIX = "tgrad."


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set options for printing (same semantics as ``torch.set_printoptions``).

    Note: as in PyTorch, ``sci_mode`` is always assigned (omitting it resets it to None).
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
        elif profile == "short":
            PRINT_OPTS.precision = 2
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 2
            PRINT_OPTS.linewidth = 80
        elif profile == "full":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = math.inf
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Current print options as a dict that can be passed to ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager that temporarily changes the print options."""
    old_kwargs = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old_kwargs)


# ----------------------------------------------------------------------------------------
# dtype helpers

def _np_dtype_name(dt: np.dtype) -> str:
    name = np.dtype(dt).name
    if name == "bool":
        return "bool"
    return name


def _is_floating_name(name: str) -> bool:
    return name.startswith("float") or name.startswith("bfloat")


def _is_complex_name(name: str) -> bool:
    return name.startswith("complex")


def _to_work_array(arr: np.ndarray, dtype_name: str) -> np.ndarray:
    """Widen to the array type whose ``tolist()`` yields what PyTorch's ``tolist()`` does."""
    if _is_complex_name(dtype_name):
        return np.asarray(arr).astype(np.complex128)
    if _is_floating_name(dtype_name):
        return np.asarray(arr).astype(np.float64)
    if dtype_name == "bool":
        return np.asarray(arr).astype(np.bool_)
    a = np.asarray(arr)
    if a.dtype.kind in "iu":
        return a
    return a.astype(np.int64)


# ----------------------------------------------------------------------------------------
# port of torch/_tensor_str.py

class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1

        view = values.reshape(-1)

        if not self.floating_dtype:
            for value in view.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return

        vals = view[np.isfinite(view) & (view != 0)]
        if vals.size == 0:
            # no valid number, do nothing
            return

        absv = np.abs(vals)
        vmin = float(absv.min())
        vmax = float(absv.max())

        if np.any(vals != np.ceil(vals)):
            self.int_mode = False

        self.sci_mode = (
            vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
            if PRINT_OPTS.sci_mode is None
            else PRINT_OPTS.sci_mode
        )

        p = PRINT_OPTS.precision
        pylist = vals.tolist()
        if self.int_mode:
            # all numbers are integers; a decimal point is appended (hence the +1)
            if self.sci_mode:
                fmt = f"{{:.{p}e}}"
                for value in pylist:
                    self.max_width = max(self.max_width, len(fmt.format(value)))
            else:
                for value in pylist:
                    self.max_width = max(self.max_width, len(f"{value:.0f}") + 1)
        else:
            fmt = f"{{:.{p}e}}" if self.sci_mode else f"{{:.{p}f}}"
            for value in pylist:
                self.max_width = max(self.max_width, len(fmt.format(value)))

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{PRINT_OPTS.precision}e}}".format(value)
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{{:.{PRINT_OPTS.precision}f}}".format(value)
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _complex_join(real_str, imag_str):
    imag_str = (imag_str + "j").lstrip()
    # handles negative numbers, +0.0, -0.0
    if imag_str[0] == "+" or imag_str[0] == "-":
        return real_str + imag_str
    return real_str + "+" + imag_str


def _scalar_str(a, formatter1, formatter2=None):
    value = a.item()
    if formatter2 is not None:
        return _complex_join(formatter1.format(value.real), formatter2.format(value.imag))
    return formatter1.format(value)


def _vector_str(a, indent, summarize, formatter1, formatter2=None):
    opts = PRINT_OPTS
    # length includes spaces and comma between elements
    element_length = formatter1.width() + 2
    if formatter2 is not None:
        # width for imag_formatter + an extra j for complex
        element_length += formatter2.width() + 1

    elements_per_line = max(1, math.floor((opts.linewidth - indent) / element_length))

    if formatter2 is not None:
        def _val_formatter(val):
            return _complex_join(formatter1.format(val.real), formatter2.format(val.imag))
    else:
        _val_formatter = formatter1.format

    if summarize and not opts.edgeitems:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * opts.edgeitems:
        data = (
            [_val_formatter(v) for v in a[: opts.edgeitems].tolist()]
            + [" ..."]
            + [_val_formatter(v) for v in a[-opts.edgeitems:].tolist()]
        )
    else:
        data = [_val_formatter(v) for v in a.tolist()]

    data_lines = [data[i: i + elements_per_line] for i in range(0, len(data), elements_per_line)]
    lines = [", ".join(line) for line in data_lines]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(a, indent, summarize, formatter1, formatter2=None):
    dim = a.ndim
    if dim == 0:
        return _scalar_str(a, formatter1, formatter2)
    if dim == 1:
        return _vector_str(a, indent, summarize, formatter1, formatter2)

    e = PRINT_OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        slices = (
            [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter1, formatter2)
             for i in range(e)]
            + ["..."]
            + [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter1, formatter2)
               for i in range(n - e, n)]
        )
    else:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter1, formatter2)
                  for i in range(n)]

    tensor_str = ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices)
    return "[" + tensor_str + "]"


def _get_summarized_data(a):
    dim = a.ndim
    e = PRINT_OPTS.edgeitems
    if dim == 0:
        return a
    if dim == 1:
        if a.shape[0] > 2 * e:
            # note: with e == 0, a[-0:] is the whole vector (same as PyTorch)
            return np.concatenate((a[:e], a[-e:]))
        return a
    if not e:
        return np.empty([0] * dim, dtype=a.dtype)
    n = a.shape[0]
    if n > 2 * e:
        idx = list(range(e)) + list(range(n - e, n))
    else:
        idx = range(n)
    return np.stack([_get_summarized_data(a[i]) for i in idx])


def _tensor_str(a, indent, dtype_name):
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    if _is_complex_name(dtype_name):
        data = _get_summarized_data(a) if summarize else a
        real_formatter = _Formatter(np.ascontiguousarray(data.real), True)
        imag_formatter = _Formatter(np.ascontiguousarray(data.imag), True)
        return _tensor_str_with_formatter(a, indent, summarize, real_formatter, imag_formatter)
    formatter = _Formatter(_get_summarized_data(a) if summarize else a,
                           _is_floating_name(dtype_name))
    return _tensor_str_with_formatter(a, indent, summarize, formatter)


def _add_suffixes(tensor_str, suffixes, indent, force_newline):
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = len(suffix)
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def format_tensor(arr, *, dtype_name: str | None = None, default_dtype_name: str = "float32",
                  device_str: str | None = None, suffixes=(), prefix: str = "tensor(") -> str:
    """Return PyTorch's ``repr`` of a dense tensor holding ``arr``'s values.

    arr: the values (any shape; float16 / ml_dtypes.bfloat16 / float32 / ... arrays).
    dtype_name: the tensor's dtype name ("float32", "int64", "bool", "bfloat16", ...);
        defaults to the name of ``arr.dtype``.
    default_dtype_name: the current default floating dtype (decides the dtype suffix).
    device_str: e.g. "cuda:0" to print ``device='cuda:0'``; None prints no device.
    suffixes: already formatted extra suffixes, appended in order after device and dtype
        (e.g. ``["grad_fn=<AddBackward0>"]`` or ``["requires_grad=True"]``).
    prefix: the opening text; continuation lines are indented by ``len(prefix)``.
    """
    arr = np.asarray(arr)
    if dtype_name is None:
        dtype_name = _np_dtype_name(arr.dtype)
    a = _to_work_array(arr, dtype_name)
    indent = len(prefix)
    out_suffixes = []

    if device_str is not None:
        out_suffixes.append("device='" + str(device_str) + "'")

    default_complex = "complex128" if default_dtype_name == "float64" else "complex64"
    has_default_dtype = dtype_name in (default_dtype_name, default_complex, "int64", "bool")

    if a.size == 0:
        # Explicitly print the shape if it is not (0,), to match NumPy behavior
        if a.ndim != 1:
            out_suffixes.append("size=" + str(tuple(int(s) for s in a.shape)))
        # In an empty tensor there are no elements to infer the dtype from.
        if dtype_name != default_dtype_name:
            out_suffixes.append("dtype=" + DTYPE_PREFIX + dtype_name)
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            out_suffixes.append("size=" + str(tuple(int(s) for s in a.shape)))
        if not has_default_dtype:
            out_suffixes.append("dtype=" + DTYPE_PREFIX + dtype_name)
        tensor_str = _tensor_str(a, indent, dtype_name)

    out_suffixes.extend(suffixes)
    return _add_suffixes(prefix + tensor_str, out_suffixes, indent, force_newline=False)


def format_meta(shape, *, dtype_name, default_dtype_name="float32", suffixes=(), prefix="tensor("):
    """PyTorch's ``repr`` of a meta tensor (no values): ``tensor(..., device='meta', size=(2, 3))``, the dtype
    shown unless it is the default floating dtype, then ``suffixes``."""
    out = ["device='meta'", "size=" + str(tuple(int(s) for s in shape))]
    if dtype_name != default_dtype_name:
        out.append("dtype=" + DTYPE_PREFIX + dtype_name)
    out.extend(suffixes)
    return _add_suffixes(prefix + "...", out, len(prefix), force_newline=False)
