"""``nn.Module``: parameters, buffers and submodules registered in assignment order.

Attribute assignment routes a ``Parameter`` to ``_parameters``, a Module to
``_modules`` and a Tensor assigned to a registered buffer name to
``_buffers``; everything else (naming, ``state_dict`` keys, ``__repr__``,
hooks, error messages) follows ``torch.nn.Module``.
"""
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import dtypes as D
from ..._creation import empty_like as _empty_like
from ...autograd import grad_mode
from ...autograd.grad_mode import no_grad
from ...device import device as Device
from ...tensor import Tensor
from ...utils.hooks import BackwardHook, RemovableHandle, register_hook
from ..parameter import Parameter


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line if line.strip() else "" for line in s]
    return first + "\n" + "\n".join(s)


def _typename(obj):
    if isinstance(obj, Tensor):
        return "tgrad." + D.TENSOR_TYPE_NAMES[obj.dtype]
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def _parse_to(args, kwargs):
    """(device, dtype) from ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments - got unexpected keyword(s) "
                        f"{', '.join(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, (str, Device)) or (isinstance(a, int) and not isinstance(a, bool)):
            device = a
        elif not isinstance(a, bool):
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    return device, dtype


class Module:
    """Base class for all neural network modules; subclasses define ``forward``."""

    training: bool

    def __init__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        s = super().__setattr__
        s("training", True)
        s("_parameters", {})
        s("_buffers", {})
        s("_non_persistent_buffers_set", set())
        s("_forward_pre_hooks", OrderedDict())
        s("_forward_pre_hooks_with_kwargs", OrderedDict())
        s("_forward_hooks", OrderedDict())
        s("_forward_hooks_with_kwargs", OrderedDict())
        s("_forward_hooks_always_called", OrderedDict())
        s("_backward_pre_hooks", OrderedDict())
        s("_backward_hooks", OrderedDict())
        s("_modules", {})

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------ registration
    def _check_member_name(self, kind, name, store):
        """PyTorch's checks of a new buffer or parameter name (``kind``) against ``store`` and attributes."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in store:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (state that is not a parameter, e.g. running statistics)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_member_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter; it becomes an attribute named ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_member_name("parameter", name, self._parameters)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module; it becomes an attribute named ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` (``""`` is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return getattr(mod, buffer_name)

    # ------------------------------------------------------------ attribute routing
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*stores):
            for d in stores:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    self.register_buffer(name, value, name not in self._non_persistent_buffers_set)
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules)
                + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    # ------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) pairs, e.g. ``("hidden.weight", ...)``, each parameter once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate=True):
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) pairs in depth-first order, self first (name ``""``)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` of every parameter (``False`` freezes the module)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ device / dtype
    def _apply(self, fn, recurse=True):
        """Replace every parameter's (and its grad's) data by ``fn(data)`` in place; buffers are reassigned."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                param_applied = fn(param)
            param.data = param_applied
            grad = param._grad
            if grad is not None:
                with no_grad():
                    grad.data = fn(grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to_empty(self, *, device, recurse=True):
        """Every parameter and buffer moved to ``device`` without copying its values (uninitialized memory)."""
        return self._apply(lambda t: _empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers; only floating-point ones change dtype."""
        device, dtype = _parse_to(args, dict(kwargs))
        if dtype is not None:
            dtype = D.to_dtype(dtype, "to")
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")

        def convert(t):
            return t.to(device, dtype if t.is_floating_point() else None)

        try:
            return self._apply(convert)
        except NotImplementedError as e:
            if str(e) != "Cannot copy out of meta tensor; no data!":
                raise
            raise NotImplementedError(f"{e} Please use tgrad.nn.Module.to_empty() instead of tgrad.nn.Module.to() "
                                      "when moving module from meta to a different device.") from None

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ------------------------------------------------------------ hooks and call
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``(module, args, kwargs)``) before forward; may return new args."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (or ``(module, args, kwargs, output)``) after forward."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` when the gradients of the outputs are computed; may return new ones."""
        return self._add_backward_hook("_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` once the gradients of the positional inputs are
        computed (None for inputs that need none); may return new grad_input."""
        return self._add_backward_hook("_backward_hooks", hook, prepend)

    def _add_backward_hook(self, name, hook, prepend):
        hooks = self.__dict__.get(name)
        if hooks is None:       # a module pickled before these dicts existed
            hooks = OrderedDict()
            super().__setattr__(name, hooks)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            return _call_with_backward_hooks(self, args, kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_forward_hooks(args, kwargs)

    def _call_forward_hooks(self, args, kwargs, bw_hook=None):
        called = set()
        result = None
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if isinstance(res, tuple) and len(res) == 2:
                            args, kwargs = res
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {res}.")
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            if bw_hook is not None:
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            res = hook(self, args, kwargs, result)
                        else:
                            res = hook(self, args, result)
                        if res is not None:
                            result = res
                    except Exception as e:
                        import warnings
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that "
                                      f"was silenced as another error was raised in forward: {str(e)}",
                                      stacklevel=2)
            raise

    def __call__(self, *args, **kwargs):
        """``_call_impl``, or the compiled call after ``compile()`` (written out: one frame less per call)."""
        d = self.__dict__
        c = d.get("_compiled_call_impl")
        if c is not None:
            return c(*args, **kwargs)
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            return _call_with_backward_hooks(self, args, kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_forward_hooks(args, kwargs)

    def compile(self, *args, **kwargs):
        """Compile this module's calls in place with ``tgrad.compile(self, *args, **kwargs)`` (capture and
        replay; PyTorch's ``Module.compile``): the module stays itself (type, attributes, state_dict)."""
        from ..._compile import compile as _compile     # here: tgrad._compile imports nn (DESIGN §2 seam)
        opt = _compile(self, *args, **kwargs)
        self.__dict__["_compiled_call_impl"] = None if opt is self else opt._call

    # ------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """OrderedDict of dotted name -> tensor for parameters and persistent buffers (detached), and each
        module's ``get_extra_state()`` where a subclass defines it; state-dict pre and post hooks run around."""
        if destination is None:
            destination = OrderedDict()
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self.__dict__.get("_state_dict_hooks", {}).values():
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def get_extra_state(self):
        """Extra state for ``state_dict`` (any picklable object); subclasses that have some override it with
        ``set_extra_state``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def set_extra_state(self, state):
        """Restore what ``get_extra_state`` returned (called by ``load_state_dict``)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def _add_state_dict_hook(self, store, hook, prepend=False):
        # the dicts are made on first use: modules built or unpickled before have none
        return register_hook(self.__dict__.setdefault(store, OrderedDict()), hook, prepend)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        return self._add_state_dict_hook("_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict`` saved this module and its
        children; may change ``state_dict`` in place."""
        return self._add_state_dict_hook("_state_dict_hooks", hook)

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        before ``load_state_dict`` loads this module (it may edit ``state_dict``)."""
        return self._add_state_dict_hook("_load_state_dict_pre_hooks", hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(lambda module, *args: hook(*args))

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` loaded this module and its children;
        it may clear ``incompatible_keys.missing_keys`` / ``unexpected_keys`` in place (before strict raises)."""
        return self._add_state_dict_hook("_load_state_dict_post_hooks", hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for hook in self.__dict__.get("_load_state_dict_pre_hooks", {}).values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in list(self._parameters.items()) + list(persistent.items()) if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, Tensor):
                    error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                      f"Tensor-like object from checkpoint but received {type(input_param)}")
                    continue
                if param.dim() == 0 and input_param.dim() == 1 and input_param.shape[0] == 1:
                    input_param = input_param[0]
                if input_param.shape != param.shape:
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                                      f"from checkpoint, the shape in current model is {param.shape}.")
                    continue
                if param.is_meta and not input_param.is_meta and not local_metadata.get("assign_to_params_buffers"):
                    warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                                  "parameter in the current model, which is a no-op. (Did you mean to pass "
                                  "`assign=True` to assign items in the state dictionary to their corresponding key "
                                  "in the module instead of copying them in place?)")
                if local_metadata.get("assign_to_params_buffers"):
                    if isinstance(param, Parameter) and not isinstance(input_param, Parameter):
                        input_param = Parameter(input_param, requires_grad=param.requires_grad)
                    setattr(self, name, input_param)
                    continue
                try:
                    with no_grad():
                        param.copy_(input_param.to(param.device))
                except Exception as ex:
                    error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model '
                                      f"are {param.size()} and whose dimensions in the checkpoint are "
                                      f"{input_param.size()}, an exception occurred : {ex.args}.")
            elif strict:
                missing_keys.append(key)
        extra = prefix + _EXTRA_STATE_KEY_SUFFIX
        has_extra = type(self).set_extra_state is not Module.set_extra_state
        if has_extra and extra in state_dict:
            self.set_extra_state(state_dict[extra])
        elif has_extra and strict:
            missing_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and not (has_extra and key == extra):
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict`` into parameters/buffers (``assign``: use its tensors instead).

        With ``strict``, missing or unexpected keys raise; shape mismatches always raise.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        state_dict = OrderedDict(state_dict)

        def load(module, local_state_dict, prefix=""):
            module._load_from_state_dict(local_state_dict, prefix, {"assign_to_params_buffers": assign}, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            for hook in module.__dict__.get("_load_state_dict_post_hooks", {}).values():
                if hook(module, _IncompatibleKeys(missing_keys, unexpected_keys)) is not None:
                    raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` are not"
                                       "expected to return new values, if incompatible_keys need to be modified,"
                                       "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ------------------------------------------------------------ repr
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


def _call_with_backward_hooks(module, args, kwargs):
    """Forward with the module's full backward (pre-)hooks attached (when grad mode records)."""
    if not grad_mode.is_grad_enabled():
        return module._call_forward_hooks(args, kwargs)
    bw = BackwardHook(module, list(module._backward_hooks.values()), list(module._backward_pre_hooks.values()))
    return module._call_forward_hooks(args, kwargs, bw)
