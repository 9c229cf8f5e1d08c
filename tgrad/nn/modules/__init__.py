"""Layers and losses (``tgrad.nn.Linear``, ``tgrad.nn.CrossEntropyLoss`` ...)."""
from .activation import (ELU, GELU, SELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,  # noqa: F401
                         LogSoftmax, Mish, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmin, Softplus, Tanh)
from .activation import (CELU, GLU, Hardshrink, PReLU, RReLU, Softmax2d, Softshrink, Softsign,  # noqa: F401
                         Tanhshrink, Threshold)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .lazy import LazyLinear, LazyModuleMixin  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,  # noqa: F401
                   NLLLoss, SmoothL1Loss)
from .loss import (CTCLoss, CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,  # noqa: F401
                   MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss)
from .module import Module  # noqa: F401
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: F401
                      ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
                      ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle  # noqa: F401
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, GroupNorm, InstanceNorm1d, InstanceNorm2d,  # noqa: F401
                            CrossMapLRN2d, LayerNorm, LocalResponseNorm, RMSNorm)
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,  # noqa: F401
                      AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d,
                      MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, LPPool1d, LPPool2d, LPPool3d)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .transformer import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
