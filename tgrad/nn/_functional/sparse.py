"""Sparse functions of ``torch.nn.functional``: embedding lookups and one-hot encoding."""
from ... import _nn_functional
from ..._nn_functional import _op


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` at the indices ``input``; the row ``padding_idx`` gets no gradient.  ``max_norm``:
    the looked-up rows are first renormalized in place (``_embedding_renorm_``); ``scale_grad_by_freq``:
    each row's gradient is divided by how often the row occurs in ``input``."""
    return _nn_functional._embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    return _op("one_hot", tensor, num_classes=num_classes)
