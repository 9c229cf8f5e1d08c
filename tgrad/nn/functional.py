"""``tgrad.nn.functional``: PyTorch's functional forms.

Each function checks its arguments the way PyTorch does, then calls one op of the table (``linear``,
``relu``, ``cross_entropy`` ... each a fused Triton kernel pair).  The bodies live in one private module
per family, ``nn/_functional/<family>.py`` (the sections of PyTorch's documentation); this module is
their table of contents.  ``_op``, ``_ntuple`` and ``_legacy_reduction`` are shared with ``nn.modules``.
"""
from .._nn_functional import _op, cosine_similarity  # noqa: F401
from .._functional_more import pdist  # noqa: F401
from ._functional.linear import linear  # noqa: F401
from ._functional.activation import (relu, relu_, relu6, leaky_relu, leaky_relu_, elu, elu_, selu, selu_, gelu,  # noqa: F401
                                     silu, mish, softplus, hardtanh, hardtanh_, hardsigmoid, hardswish, logsigmoid,
                                     sigmoid, tanh, softmax, log_softmax, softmin)
from ._functional.dropout import dropout, dropout1d, dropout2d, dropout3d  # noqa: F401
from ._functional.normalization import layer_norm, batch_norm, normalize, group_norm, instance_norm  # noqa: F401
from ._functional.sparse import embedding, one_hot  # noqa: F401
from ._functional.vision import (pad, interpolate, upsample, upsample_nearest, upsample_bilinear,  # noqa: F401
                                 pixel_shuffle, pixel_unshuffle, channel_shuffle, affine_grid, grid_sample)
from ._functional.loss import (_legacy_reduction, cross_entropy, nll_loss, binary_cross_entropy,  # noqa: F401
                               binary_cross_entropy_with_logits, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
                               kl_div)
from ._functional.ctc import ctc_loss  # noqa: F401
from ._functional.attention import scaled_dot_product_attention, multi_head_attention_forward  # noqa: F401
from ._functional.conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,  # noqa: F401
                               conv_transpose3d)
from ._functional.pooling import (max_pool1d, max_pool2d, max_pool1d_with_indices,  # noqa: F401
                                  max_pool2d_with_indices, avg_pool1d, avg_pool2d, max_pool3d, avg_pool3d,
                                  adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_avg_pool1d, adaptive_avg_pool2d,
                                  adaptive_max_pool1d, adaptive_max_pool2d, max_pool3d_with_indices,
                                  adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
                                  adaptive_max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d,
                                  lp_pool1d, lp_pool2d, lp_pool3d)
from ._functional.utils import _ntuple  # noqa: F401
from ._functional_more import (alpha_dropout, bilinear, celu, celu_,  # noqa: F401
                               cosine_embedding_loss, embedding_bag, feature_alpha_dropout, fold, gaussian_nll_loss,
                               glu, gumbel_softmax, hardshrink, hinge_embedding_loss,
                               local_response_norm, margin_ranking_loss, multi_margin_loss,
                               multilabel_soft_margin_loss, pairwise_distance, poisson_nll_loss, prelu, rms_norm,
                               rrelu, rrelu_, soft_margin_loss, softshrink, softsign, tanhshrink, threshold,
                               threshold_, triplet_margin_loss, triplet_margin_with_distance_loss, unfold)
