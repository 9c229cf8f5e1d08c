"""``nn.utils``: gradient clipping, parameter <-> vector conversion, ``rnn`` (packed sequences), ``fusion``
(eval BatchNorm folded into conv/linear), weight and spectral normalization (hook forms; ``parametrize`` and
``parametrizations`` use nn.modules, which imports nn.utils, so ``tgrad.nn`` imports those two)."""
from . import fusion, prune, rnn  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
