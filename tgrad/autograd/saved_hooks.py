"""``saved_tensors_hooks(pack, unpack)``: control how tensors saved for backward are stored.

Exposed as ``tgrad.autograd.graph.saved_tensors_hooks`` / ``save_on_cpu``, as in PyTorch.
"""
import threading


class _State(threading.local):
    stack = ()          # a new thread's values: no hooks, not disabled
    disabled = None


_state = _State()


def pack(t):
    """(pack_hook(t), unpack_hook) of the innermost active hooks, or None.  The pack hook runs with the
    hooks switched off, so the ops it uses save tensors the ordinary way."""
    stack = _state.stack
    if not stack:
        return None
    pack_hook, unpack_hook = stack[-1]
    _state.stack = ()
    try:
        return pack_hook(t), unpack_hook
    finally:
        _state.stack = stack


class saved_tensors_hooks:
    """Within the block, every tensor saved for backward is stored as ``pack_hook(t)`` and read back as
    ``unpack_hook(packed)``."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = _state.disabled
        if msg is not None:
            raise RuntimeError(msg)
        _state.stack = _state.stack + ((self.pack_hook, self.unpack_hook),)
        return self

    def __exit__(self, *exc):
        _state.stack = _state.stack[:-1]
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied to host memory during forward and back to their device for backward."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(t):
            return t.device, t.detach().to("cpu", copy=True)

        def unpack_from_cpu(packed):
            dev, host = packed
            return host.to(dev)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Inside the block, using ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = (_state.stack, _state.disabled)
        _state.stack = ()
        _state.disabled = self.error_message

    def __exit__(self, *exc):
        _state.stack, _state.disabled = self.prev
        return False
