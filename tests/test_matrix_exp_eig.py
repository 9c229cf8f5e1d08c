"""tgrad.linalg.matrix_exp / tgrad.matrix_exp / Tensor.matrix_exp against PyTorch-printed values, its autograd node
and errors; linalg.eig / eigvals: PyTorch's shape errors, then a clear error (tgrad has no complex dtypes)."""
import numpy as np
import pytest

import tgrad


def test_matrix_exp_forms_and_pytorch_values():
    A = tgrad.tensor([[0.0, 1.0], [-2.0, -3.0]], requires_grad=True)
    # PyTorch 2.13: torch.linalg.matrix_exp of this A -> [[0.6004, 0.2325], [-0.4651, -0.0972]]
    want = [[2 * np.exp(-1) - np.exp(-2), np.exp(-1) - np.exp(-2)],
            [-2 * np.exp(-1) + 2 * np.exp(-2), -np.exp(-1) + 2 * np.exp(-2)]]
    for E in (tgrad.linalg.matrix_exp(A), tgrad.matrix_exp(A), A.matrix_exp()):
        np.testing.assert_allclose(E.detach().cpu().numpy(), want, rtol=1e-6)
        assert type(E.grad_fn).__name__ == "LinalgMatrixExpBackward0"
    assert tgrad.matrix_exp(tgrad.zeros(0, 0)).shape == (0, 0)
    assert tgrad.zeros(3, 0, 0).matrix_exp().shape == (3, 0, 0)


def test_matrix_exp_of_commuting_sum_and_gradient_of_a_diagonal():
    d = tgrad.tensor([0.5, -1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    E = tgrad.linalg.matrix_exp(tgrad.diag_embed(d))
    np.testing.assert_allclose(E.detach().cpu().numpy(), np.diag(np.exp([0.5, -1.0, 2.0])), rtol=1e-14)
    E.diagonal().sum().backward()
    np.testing.assert_allclose(d.grad.cpu().numpy(), np.exp([0.5, -1.0, 2.0]), rtol=1e-13)


def test_matrix_exp_bad_input():
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: The input tensor A must have at least 2 dimensions."):
        tgrad.linalg.matrix_exp(tgrad.ones(3))
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: A must be batches of square matrices, but they are 2 by "
                                           "3 matrices"):
        tgrad.linalg.matrix_exp(tgrad.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        tgrad.linalg.matrix_exp(tgrad.ones(2, 2, dtype=tgrad.int64))


@pytest.mark.parametrize("fn", [tgrad.linalg.eig, tgrad.linalg.eigvals])
def test_eig_needs_complex_dtypes(fn):
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        fn(tgrad.ones(2, 3))
    with pytest.raises(NotImplementedError, match="tgrad has no complex dtypes"):
        fn(tgrad.ones(2, 2))
