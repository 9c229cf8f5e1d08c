"""``tgrad.backends.mps``: Apple's Metal backend does not exist in tgrad."""


def is_available():
    return False


def is_built():
    return False
