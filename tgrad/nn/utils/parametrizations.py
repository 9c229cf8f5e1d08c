"""``nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and ``spectral_norm`` as parametrizations."""
from enum import Enum, auto

from ... import _creation as C
from ... import _functional as FN
from ... import _functional_more as FM
from ... import dtypes as D
from ... import linalg
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q, eps=None):
    n, k = Q.size(-2), Q.size(-1)
    Id = C.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * D.finfo(Q.dtype).eps
    return FM.allclose(Q.mT @ Q, Id, atol=eps)


def _householder_product(A, tau):
    """H_1 H_2 ... H_k, first k columns (PyTorch's ``linalg.householder_product``): H_i = I - tau_i v_i v_i^T,
    v_i = column i of A below the diagonal with a unit diagonal entry; A (*, n, k), tau (*, k).  Built from
    matmuls, so it is differentiable in A and tau."""
    n, k = A.size(-2), A.size(-1)
    V = A.tril(-1) + C.eye(n, k, dtype=A.dtype, device=A.device)
    Q = C.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = V[..., :, i:i + 1]
        Q = Q - (Q @ v) @ (tau[..., i:i + 1].unsqueeze(-1) * v.mT)
    return Q[..., :k]


def _geqrf(A):
    """LAPACK's geqrf of A (*, n, k), n >= k: (X, tau) with R on and above X's diagonal and the Householder vectors
    below it (dlarfg's convention: beta = -sign(alpha) ||x||, tau = (beta - alpha) / beta, 0 when x is already
    a multiple of e_1)."""
    R = A.clone()
    n, k = R.size(-2), R.size(-1)
    tau = R.new_zeros(*R.shape[:-2], k)
    for j in range(min(n, k)):
        alpha = R[..., j, j].clone()
        below = R[..., j + 1:, j]
        xnorm = below.pow(2).sum(-1).sqrt() if n - j > 1 else alpha * 0
        trivial = xnorm == 0
        beta = -(alpha.pow(2) + xnorm.pow(2)).sqrt() * FN.where(alpha >= 0, 1.0, -1.0)
        beta = FN.where(trivial, alpha, beta)
        t = FN.where(trivial, 0.0, (beta - alpha) / FN.where(trivial, 1.0, beta))
        v = below / FN.where(trivial, 1.0, alpha - beta).unsqueeze(-1)
        v = FN.where(trivial.unsqueeze(-1), 0.0, v)
        R[..., j, j] = beta
        R[..., j + 1:, j] = v
        if j + 1 < k:
            vf = FN.cat([R.new_ones(*R.shape[:-2], 1), v], -1).unsqueeze(-1)          # (*, n - j, 1)
            C_ = R[..., j:, j + 1:]
            R[..., j:, j + 1:] = C_ - (t.unsqueeze(-1).unsqueeze(-1) * vf) @ (vf.mT @ C_)
        tau[..., j] = t
    return R, tau


def _make_orthogonal(A):
    """The Q of A = QR (A tall) with R's diagonal non-negative."""
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """X (*, n, k) -> an orthogonal (orthonormal-column) matrix: exp(A) or the Cayley map of A = tril(X) - tril(X)^T
    (first k columns), or the Householder product of X's strictly lower part; with ``use_trivialization`` times
    the buffer ``base`` (the starting point, set by ``right_inverse``)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = FN.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:
                Id = C.eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(FN.add(Id, A, alpha=-0.5), FN.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # (detach: tgrad's float -> int casts still carry a graph; PyTorch's .int() output has none)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                              "or the Cayley parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag.copy_(diag.sign() * FN.where(tau == 0.0, -1.0, 1.0))
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = C.randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(FN.cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = C.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """``module.<name>`` (a matrix or a batch of them) stays orthogonal (orthonormal rows or columns, whichever
    are fewer): ``orthogonal_map`` "matrix_exp" (default for square), "cayley" or "householder" (default
    otherwise); assigning an orthogonal matrix to ``module.<name>`` sets it."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """(g, v) -> v * g / ||v|| (norm over all dims but ``dim``); right_inverse: w -> (||w||, w)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name>`` = g * v / ||v|| with g = ``parametrizations.<name>.original0`` and
    v = ``original1``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """w -> w / sigma(w), sigma by power iteration on buffers ``_u``, ``_v`` (15 iterations at creation, then
    ``n_power_iterations`` per training forward); a 1-D w is just normalized."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)            # PyTorch's draws
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / u.vdot(weight_mat.mv(v))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name>`` = original / sigma(original) (dim 1 for transposed convs)."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
