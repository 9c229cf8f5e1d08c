"""Named result tuples of ops that return several tensors (``tgrad.return_types.max`` ...)."""


class _ValuesIndices(tuple):
    """(values, indices) with attribute access, like ``torch.return_types.max``."""

    __slots__ = ()
    n_fields = 2
    _fields = ("values", "indices")

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return f"tgrad.return_types.{type(self).__name__}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    def __reduce__(self):
        return (type(self), tuple(self))


class max(_ValuesIndices):
    pass


class min(_ValuesIndices):
    pass


class sort(_ValuesIndices):
    pass


class topk(_ValuesIndices):
    pass


class median(_ValuesIndices):
    pass


class nanmedian(_ValuesIndices):
    pass


class mode(_ValuesIndices):
    pass


class kthvalue(_ValuesIndices):
    pass


class cummax(_ValuesIndices):
    pass


class cummin(_ValuesIndices):
    pass


class aminmax(tuple):
    """(min, max) with attribute access, like ``torch.return_types.aminmax``."""

    __slots__ = ()
    n_fields = 2
    _fields = ("min", "max")

    def __new__(cls, min, max):
        return tuple.__new__(cls, (min, max))

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]

    def __repr__(self):
        return f"tgrad.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"

    def __reduce__(self):
        return (type(self), tuple(self))


class _Named(tuple):
    """A result tuple with attribute access by field name and PyTorch's repr."""

    __slots__ = ()
    _fields = ()

    def __new__(cls, *values):
        if len(values) != len(cls._fields):
            raise TypeError(f"{cls.__name__} takes {len(cls._fields)} values ({', '.join(cls._fields)})")
        return tuple.__new__(cls, values)

    def __getattr__(self, name):
        try:
            return self[type(self)._fields.index(name)]
        except ValueError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"tgrad.return_types.{type(self).__name__}(\n{body})"

    def __reduce__(self):
        return (type(self), tuple(self))


def _named(name, *fields):
    return type(name, (_Named,), {"__slots__": (), "_fields": fields, "n_fields": len(fields),
                                  "__module__": __name__})


histogram = _named("histogram", "hist", "bin_edges")
histogramdd = _named("histogramdd", "hist", "bin_edges")
frexp = _named("frexp", "mantissa", "exponent")

# the linear-algebra results (tgrad.linalg, tgrad.svd / qr / slogdet ...)
linalg_lu_factor = _named("linalg_lu_factor", "LU", "pivots")
linalg_lu_factor_ex = _named("linalg_lu_factor_ex", "LU", "pivots", "info")
linalg_lu = _named("linalg_lu", "P", "L", "U")
lu_unpack = _named("lu_unpack", "P", "L", "U")
linalg_inv_ex = _named("linalg_inv_ex", "inverse", "info")
linalg_solve_ex = _named("linalg_solve_ex", "result", "info")
linalg_cholesky_ex = _named("linalg_cholesky_ex", "L", "info")
linalg_slogdet = _named("linalg_slogdet", "sign", "logabsdet")
slogdet = _named("slogdet", "sign", "logabsdet")
linalg_eigh = _named("linalg_eigh", "eigenvalues", "eigenvectors")
linalg_svd = _named("linalg_svd", "U", "S", "Vh")
svd = _named("svd", "U", "S", "V")
linalg_qr = _named("linalg_qr", "Q", "R")
qr = _named("qr", "Q", "R")
linalg_lstsq = _named("linalg_lstsq", "solution", "residuals", "rank", "singular_values")
triangular_solve = _named("triangular_solve", "solution", "cloned_coefficient")
