"""``tgrad.backends``: PyTorch's ``torch.backends`` switches (``cuda``, ``cudnn``, ``mps``, ``cpu``).

Only ``backends.cuda.matmul.allow_tf32`` changes a kernel (see ``backends.cuda``); the others are kept so
programs that set or query them run, and say in their docstrings why they change no result in tgrad.
"""
from . import cpu as cpu
from . import cuda as cuda
from . import cudnn as cudnn
from . import mps as mps
