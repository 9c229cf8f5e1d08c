"""Test support shipped with tgrad: the op database (OpInfo) used by the op tests and the AOT check."""
import re as _re

import numpy as _np

from ..tensor import Tensor as _Tensor

_DEVICE_PART = _re.compile(r", device='cuda:\d+'")


def neutral_repr(t):
    """``repr(t)`` without the ``device='cuda:N'`` part a cuda tensor prints: one expected string for a test
    that runs under any ``--device``."""
    return _DEVICE_PART.sub("", repr(t))


_TOLS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """``torch.testing.assert_close``: |actual - expected| <= atol + rtol |expected| elementwise, after checking
    shape, dtype and device; recurses into sequences and mappings; PyTorch's default tolerances per dtype and
    its failure messages."""
    _assert_close(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg, "")


def _assert_close(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg, where):
    np, Tensor = _np, _Tensor
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {'rtol' if rtol is None else 'atol'}.")
    if isinstance(expected, dict):
        for k in expected:
            _assert_close(actual[k], expected[k], rtol, atol, equal_nan, check_device, check_dtype, msg,
                          f"{where}[{k!r}]")
        return
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_close(a, e, rtol, atol, equal_nan, check_device, check_dtype, msg, f"{where}[{i}]")
        return
    suffix = f"\n\nThe failure occurred for item {where}" if where else ""
    if not isinstance(expected, Tensor):
        a, e = float(actual), float(expected)
        r, t = (1e-7, 1e-7) if rtol is None else (rtol, atol)
        if a == e or (equal_nan and a != a and e != e) or abs(a - e) <= t + r * abs(e):
            return
        text = (f"Scalars are not close!\n\nExpected {expected} but got {actual}.\nAbsolute difference: "
                f"{abs(a - e)} (up to {t} allowed)\nRelative difference: "
                f"{abs(a - e) / abs(e) if e else float('inf')} (up to {r} allowed)")
        raise AssertionError((msg or text) + suffix)
    for attr, on in (("shape", True), ("device", check_device), ("dtype", check_dtype)):
        if on and getattr(actual, attr) != getattr(expected, attr):
            raise AssertionError(f"The values for attribute '{attr}' do not match: {getattr(actual, attr)} != "
                                 f"{getattr(expected, attr)}." + suffix)
    exact = not expected.dtype.is_floating_point
    work = np.float32 if exact or expected.dtype.itemsize < 4 else expected.dtype.np     # PyTorch's opmath
    a = actual.detach().cpu().numpy().astype(work)
    e = expected.detach().cpu().numpy().astype(work)
    r, t = (0.0, 0.0) if exact and rtol is None else _TOLS.get(expected.dtype.name, (0.0, 0.0)) \
        if rtol is None else (rtol, atol)
    with np.errstate(all="ignore"):
        diff = np.abs(a - e)
        ok = (a == e) | (np.isfinite(diff) & (diff <= t + r * np.abs(e)))
        if equal_nan:
            ok |= np.isnan(a) & np.isnan(e)
        if ok.all():
            return
        rel = diff / np.abs(e)
    bad = ~ok
    n = int(bad.sum())
    iabs = np.unravel_index(np.nanargmax(np.where(bad, diff, -1)), a.shape)
    irel = np.unravel_index(np.nanargmax(np.where(bad, rel, -1)), a.shape)
    fmt = (lambda v: str(int(v))) if exact else (lambda v: str(float(v)))
    rel = rel.astype(np.float64)
    if exact:
        text = (f"Tensor-likes are not equal!\n\nMismatched elements: {n} / {a.size} ({100 * n / a.size:.1f}%)\n"
                f"Greatest absolute difference: {fmt(diff[iabs])} at index {tuple(int(i) for i in iabs)}\n"
                f"Greatest relative difference: {float(rel[irel])} at index "
                f"{tuple(int(i) for i in irel)}")
    else:
        text = (f"Tensor-likes are not close!\n\nMismatched elements: {n} / {a.size} ({100 * n / a.size:.1f}%)\n"
                f"Greatest absolute difference: {fmt(diff[iabs])} at index {tuple(int(i) for i in iabs)} "
                f"(up to {t} allowed)\nGreatest relative difference: {fmt(rel[irel])} at index "
                f"{tuple(int(i) for i in irel)} (up to {r} allowed)")
    raise AssertionError((msg or text) + suffix)


assert_allclose = assert_close
