"""OpInfos for the sparse COO value ops (ops/sparse.py), through the public forms that launch them:
coalesce (sparse_coalesce_values), to_dense and dense + sparse (sparse_scatter_add), sparse.mm (sparse_mm), CSR @ dense
(sparse_mm over the row pointers, sparse_count_below for the rows); the COO ones run sparse_segments.  Index lists are Python lists (not cast to the dtype under test)."""
import numpy as np

import tgrad
from tgrad import dtypes as D

from ..opinfo import OpInfo, SampleInput

FLOATS = (D.float32, D.float64, D.float16, D.bfloat16)
LOW_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 2e-2)}


def _idx(rng, size, nnz):
    return np.stack([rng.integers(0, n, nnz) for n in size]).tolist()


def _samples(values_shape):
    """(indices, values) samples over sparse sizes (4, 5), (7,), (33, 2); duplicates on purpose."""
    def samples(rng):
        out = []
        for size, nnz in (((4, 5), 9), ((7,), 6), ((33, 2), 40), ((3, 3), 1)):
            out.append(SampleInput(_idx(rng, size, nnz), rng.uniform(-1, 1, (nnz,) + values_shape), size))
        return out
    return samples


def _dense_ref(idx, vals, size):
    out = np.zeros(tuple(size) + vals.shape[1:], np.float64)
    np.add.at(out, tuple(np.asarray(idx, np.int64)), vals)
    return out


def _coalesce(idx, vals, size):
    return tgrad.sparse_coo_tensor(idx, vals, size + tuple(vals.shape[1:])).coalesce().values()


def _coalesce_ref(idx, vals, size):
    lin = np.ravel_multi_index(np.asarray(idx, np.int64), size)
    return np.stack([vals[lin == k].sum(0) for k in np.unique(lin)])


def _to_dense(idx, vals, size):
    return tgrad.sparse_coo_tensor(idx, vals, size + tuple(vals.shape[1:])).to_dense()


def _add_samples(rng):
    return [SampleInput(rng.uniform(-1, 1, tuple(s.args[2]) + (2,)), *s.args)
            for s in _samples((2,))(rng) if s.args[2] != (33, 2)]          # (gradcheck: a column per element)


def _add(dense, idx, vals, size):
    return dense.add(tgrad.sparse_coo_tensor(idx, vals, tuple(dense.shape)), alpha=-0.5)


def _add_ref(dense, idx, vals, size):
    return dense - 0.5 * _dense_ref(idx, vals, size)


def _mm_samples(rng):
    return [SampleInput(_idx(rng, (n, k), nnz), rng.uniform(-1, 1, (nnz,)), rng.uniform(-1, 1, (k, p)), (n, k))
            for n, k, p, nnz in ((4, 5, 3, 9), (7, 2, 1, 6), (33, 8, 5, 40), (3, 3, 2, 1))]


def _mm(idx, vals, dense, size):
    return tgrad.sparse.mm(tgrad.sparse_coo_tensor(idx, vals, size), dense)


def _mm_ref(idx, vals, dense, size):
    return _dense_ref(idx, vals, size) @ dense


def _csr_samples(rng):
    out = []
    for n, k, p in ((4, 5, 3), (7, 2, 1), (33, 8, 5), (3, 3, 2)):
        mask = rng.random((n, k)) < 0.4
        mask[0] = False                                          # an empty row
        crow = np.concatenate([[0], np.cumsum(mask.sum(1))]).tolist()
        col = np.nonzero(mask)[1].tolist()
        out.append(SampleInput(crow, col, rng.uniform(-1, 1, (len(col),)), rng.uniform(-1, 1, (k, p)), (n, k)))
    return out


def _csr_mm(crow, col, vals, dense, size):
    return tgrad.sparse_csr_tensor(crow, col, vals, size) @ dense


def _csr_mm_ref(crow, col, vals, dense, size):
    rows = np.repeat(np.arange(size[0]), np.diff(crow))
    return _dense_ref([rows, col], vals, size) @ dense


OPS = [
    OpInfo("sparse_coalesce_values", _coalesce, _coalesce_ref, _samples(()), dtypes=FLOATS, tol=LOW_TOL,
           covers=("sparse_segments",)),
    OpInfo("sparse_coalesce_values_hybrid", _coalesce, _coalesce_ref, _samples((2,)), dtypes=FLOATS, tol=LOW_TOL,
           covers=("sparse_coalesce_values",)),
    OpInfo("sparse_scatter_add", _to_dense, _dense_ref, _samples(()), dtypes=FLOATS, tol=LOW_TOL),
    OpInfo("sparse_scatter_add_dense", _add, _add_ref, _add_samples, dtypes=FLOATS, tol=LOW_TOL,
           covers=("sparse_scatter_add",)),
    OpInfo("sparse_mm", _mm, _mm_ref, _mm_samples, dtypes=FLOATS, tol=LOW_TOL),
    OpInfo("sparse_csr_mm", _csr_mm, _csr_mm_ref, _csr_samples, dtypes=FLOATS, tol=LOW_TOL,
           covers=("sparse_count_below",)),
]
