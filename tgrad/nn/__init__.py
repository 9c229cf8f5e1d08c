"""``tgrad.nn``: Module, Parameter, layers, losses, ``functional``, ``init`` and ``utils``."""
from . import attention, functional, init, parallel, utils  # noqa: F401
from .modules import (ELU, GELU, SELU, BatchNorm1d, BCELoss, BCEWithLogitsLoss, CrossEntropyLoss,  # noqa: F401
                      Dropout, Embedding, Flatten, Hardsigmoid, Hardswish, Hardtanh, HuberLoss, Identity,
                      KLDivLoss, L1Loss, LayerNorm, LeakyReLU, Linear, LogSigmoid, LogSoftmax, Mish, Module,
                      ModuleDict, ModuleList, MSELoss, NLLLoss, ReLU, ReLU6, Sequential, Sigmoid, SiLU,
                      SmoothL1Loss, Softmax, Softmin, Softplus, Tanh, Unflatten)
from .modules import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: F401
                      AvgPool1d, AvgPool2d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Dropout1d,
                      Dropout2d, GroupNorm, InstanceNorm1d, InstanceNorm2d, MaxPool1d, MaxPool2d)
from .modules import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: F401
                      ConstantPad3d, ChannelShuffle, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d,
                      ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
                      ZeroPad3d, Conv3d, ConvTranspose3d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d,
                      BatchNorm3d, MaxPool3d, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d)
from .modules import MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, LPPool1d, LPPool2d, LPPool3d  # noqa: F401
from .modules import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .modules import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                      TransformerEncoder, TransformerEncoderLayer)
from .modules import (CELU, CTCLoss, GLU, Bilinear, CosineEmbeddingLoss, CosineSimilarity, EmbeddingBag, Fold,  # noqa: F401
                      GaussianNLLLoss, Hardshrink, HingeEmbeddingLoss, LocalResponseNorm, MarginRankingLoss,
                      CrossMapLRN2d,
                      MultiLabelSoftMarginLoss, MultiMarginLoss, PairwiseDistance, ParameterDict, ParameterList,
                      PoissonNLLLoss, PReLU, RMSNorm, RReLU, Softmax2d, SoftMarginLoss, Softshrink, Softsign,
                      Tanhshrink, Threshold, TripletMarginLoss, TripletMarginWithDistanceLoss, Unfold)
from .modules import AlphaDropout, Dropout3d, FeatureAlphaDropout, LazyLinear  # noqa: F401
from .parameter import Parameter, UninitializedParameter  # noqa: F401
from .utils import parametrizations, parametrize  # noqa: F401  (nn.utils cannot import them: see there)
from .modules import AdaptiveLogSoftmaxWithLoss  # noqa: F401,E402
from .modules import SyncBatchNorm  # noqa: F401,E402
