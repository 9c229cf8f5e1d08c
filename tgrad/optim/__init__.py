"""``tgrad.optim``: optimizers whose steps run as fused Triton kernels, and ``lr_scheduler``."""
from . import lr_scheduler, swa_utils  # noqa: F401
from ._single import ASGD, Adadelta, Adamax, NAdam, RAdam, Rprop  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401
from .sparse_adam import SparseAdam  # noqa: F401
