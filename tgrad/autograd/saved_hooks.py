"""``saved_tensors_hooks(pack, unpack)``: control how tensors saved for backward are stored."""
import threading

_state = threading.local()


def current():
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """Within the block, every tensor saved for backward is stored as ``pack(t)`` and read back as
    ``unpack(packed)``."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if not hasattr(_state, "stack"):
            _state.stack = []
        _state.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _state.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied to host memory during forward and back to their device for backward."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t.device, t.detach().to("cpu", copy=True))

        def unpack(packed):
            dev, host = packed
            return host.to(dev)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = getattr(_state, "stack", [])
        _state.stack = []

    def __exit__(self, *exc):
        _state.stack = self.prev
        return False
