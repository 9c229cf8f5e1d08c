"""Per-thread grad-mode flags, read on every op call (the ground floor: no imports from tgrad).

``grad``: grad mode (``no_grad`` turns it off); ``inference``: inference mode;
``recording`` = grad and not inference, kept up to date by ``set_grad`` and
``set_inference`` (ops read only it).  ``tgrad.autograd.grad_mode`` builds the
context managers and the public functions on these.  A new thread starts with
grad mode on and inference mode off (the class attributes).
"""
import threading


class _State(threading.local):
    grad = True
    inference = False
    recording = True


state = _State()


def set_grad(mode):
    state.grad = mode = bool(mode)
    state.recording = mode and not state.inference


def set_inference(mode):
    state.inference = mode
    state.recording = state.grad and not mode
