"""``RemovableHandle``: what ``register_*_hook`` returns; ``remove()`` unregisters the hook."""
import weakref


class RemovableHandle:
    """Removes ``id`` from ``hooks_dict`` (and from each of ``extra_dict``) on ``remove()``."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extra = extra_dict if isinstance(extra_dict, (list, tuple)) else ([extra_dict] if extra_dict is not None
                                                                           else [])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
