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


class mode(_ValuesIndices):
    pass


class kthvalue(_ValuesIndices):
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
