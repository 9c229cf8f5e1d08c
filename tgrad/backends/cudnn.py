"""``tgrad.backends.cudnn``: tgrad has no cuDNN (convolutions are Triton kernels, deterministic and in exact
fp32), so ``is_available()`` is False and the flags PyTorch programs set (``benchmark``, ``deterministic``,
``enabled``, ``allow_tf32``) are kept but change no result: every setting allows what tgrad computes."""
enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None
