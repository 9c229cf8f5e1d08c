"""Layers and losses (``tgrad.nn.Linear``, ``tgrad.nn.CrossEntropyLoss`` ...)."""
from .activation import (ELU, GELU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,  # noqa: F401
                         LogSoftmax, Mish, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Tanh)
from .container import ModuleDict, ModuleList, Sequential  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,  # noqa: F401
                   NLLLoss, SmoothL1Loss)
from .module import Module  # noqa: F401
from .normalization import BatchNorm1d, LayerNorm  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)
