"""``RemovableHandle``: what ``register_*_hook`` returns; ``remove()`` unregisters the hook."""
import warnings
import weakref

from ..autograd.function import Function
from ..tensor import Tensor


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


def register_hook(hooks, hook, prepend=False):
    """Add ``hook`` to the OrderedDict ``hooks`` (first with ``prepend``); its handle removes it."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class _BackwardHookFunction(Function):
    """Identity on tensors; its backward hands the incoming gradients to ``ctx.hook_fn`` (if set)."""

    @staticmethod
    def forward(ctx, *args):
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[a for a in args if isinstance(a, Tensor) and not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        fn = getattr(ctx, "hook_fn", None)
        return fn(grads) if fn is not None else grads


class BackwardHook:
    """A module's full backward hooks for one forward call (PyTorch's ``torch.utils.hooks.BackwardHook``):
    the tensor inputs and outputs pass through identity Functions; the outputs' node runs the backward
    pre-hooks and records grad_output, the inputs' node calls ``hook(module, grad_input, grad_output)``."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module, self.user_hooks, self.user_pre_hooks = module, user_hooks, user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = self.n_inputs = -1
        self.output_tensors_index = self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for i, v in zip(indices, values):
            res[i] = v
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values):
        return tuple(values[i] for i in indices)

    def _apply_on_tensors(self, fn, args):
        """Pass the tensors of ``args`` through a _BackwardHookFunction whose node runs ``fn(grads)``."""
        tensors_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in tensors_idx]
        if not any(t.requires_grad for t in tensors):
            return args, None
        new = _BackwardHookFunction.apply(*tensors)
        if not new:
            return args, None
        grad_fns = [t.grad_fn for t in new if t.grad_fn is not None]
        grad_fns[0].hook_fn = fn
        arg_list = list(args)
        for i, t in zip(tensors_idx, new):
            arg_list[i] = t
        return tuple(arg_list), tensors_idx

    def setup_input_hook(self, args):
        def fn(grad_input):
            if not self.user_hooks:
                return grad_input
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                       f"{len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        self.n_inputs = len(args)
        args, self.input_tensors_index = self._apply_on_tensors(fn, args)
        return args

    def setup_output_hook(self, result):
        def fn(grad_output):
            self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
            for hook in self.user_pre_hooks:
                out = hook(self.module, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(self.grad_outputs):
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, got "
                                       f"{len(out)}, but expected {len(self.grad_outputs)}")
                self.grad_outputs = tuple(out)
            if self.input_tensors_index is None:    # no input needs a gradient: the hooks run now
                if self.user_hooks:
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/"
                                  "main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
                                  "for more details.", stacklevel=5)
                grad_inputs = self._pack_with_none([], [], self.n_inputs)
                for hook in self.user_hooks:
                    if hook(self.module, grad_inputs, self.grad_outputs) is not None:
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
                self.grad_outputs = None
            return self._unpack_none(self.output_tensors_index, self.grad_outputs) \
                if self.grad_outputs is not None else grad_output

        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        self.n_outputs = len(outs)
        outs, self.output_tensors_index = self._apply_on_tensors(fn, outs)
        return outs[0] if single else outs
