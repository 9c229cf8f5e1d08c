"""``optim.Optimizer``: parameter groups with per-group options, per-parameter state, state dicts.

Subclasses implement ``step`` by calling one fused op-table entry
(``sgd_step``, ``adam_step`` ...) per group; parameters whose ``.grad`` is
None (frozen, or unused in the loss) are skipped.
"""
import functools
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import dtypes as D
from ..autograd import dispatch
from ..autograd.grad_mode import enable_grad, no_grad
from .._creation import tensor as _tensor
from ..tensor import Tensor
from ..utils.hooks import register_hook

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; may return (new_args, new_kwargs)."""
    return register_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return register_hook(_global_optimizer_post_hooks, hook)


def _hooked_step(step):
    """``step`` running the global and the optimizer's own step pre and post hooks around it (PyTorch's
    ``profile_hook_step``); with none registered, only a dict lookup more."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        pre, post = self.__dict__.get("_optimizer_step_pre_hooks"), self.__dict__.get("_optimizer_step_post_hooks")
        if not (pre or post or _global_optimizer_pre_hooks or _global_optimizer_post_hooks):
            return step(self, *args, **kwargs)
        args = (self,) + args       # the hooks see step's own arguments, self first (as PyTorch's)
        for hook in chain(_global_optimizer_pre_hooks.values(), (pre or {}).values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        out = step(*args, **kwargs)
        for hook in chain((post or {}).values(), _global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    wrapper._tgrad_hooked = True
    return wrapper


def _add_hook(opt, store, hook, prepend=False):
    # the dicts are made on first use: __getstate__ keeps only defaults, state and param_groups
    return register_hook(opt.__dict__.setdefault(store, OrderedDict()), hook, prepend)


class _RequiredParameter:
    """Singleton marking a default that every parameter group must give."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return "tgrad." + D.TENSOR_TYPE_NAMES[obj.dtype]
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


_FUSED_REPLAY = None     # set by tgrad.compile while it replays a step: relaunches an update it has seen


def _scalar_step():
    """A fresh ``state["step"]``: a float32 0-dim cpu tensor, as PyTorch's non-capturable optimizers keep it."""
    return _tensor(0.0, dtype=D.float32, device="cpu")


def _bump_step(step_t):
    """``step_t += 1`` in place (cpu: through host memory, no kernel launch); returns the new value."""
    if step_t.device.type != "cpu":
        with no_grad():
            step_t.add_(1)
        return step_t.item()
    view = step_t.numpy()
    view[...] = view + 1
    step_t._version_counter[0] += 1
    return float(view)


def _check_hparams(**checks):
    """``name=(value, message)``: raise PyTorch's ValueError for the first negative value."""
    for value, msg in checks.values():
        if not 0.0 <= value:
            raise ValueError(f"{msg}: {value}")


def _as_real(ts):
    """Complex tensors of the list ``ts`` as their float views (sharing storage and version counter)."""
    return [t._view_of(t.shape + (2,), tuple(2 * s for s in t.stride()) + (1,), 2 * t.storage_offset(),
                       t.dtype.to_real()) if getattr(t, "dtype", None) is not None and t.dtype.is_complex else t
            for t in ts]


class Optimizer:
    """Base class: ``Optimizer(params, defaults)`` where params are tensors or dicts (parameter groups)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_tgrad_hooked", False):
            cls.step = _hooked_step(step)

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` before ``step``; may return (new_args, new_kwargs)."""
        return _add_hook(self, "_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        return _add_hook(self, "_optimizer_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` before ``state_dict`` packs the state."""
        return _add_hook(self, "_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` after; a returned dict replaces the state dict."""
        return _add_hook(self, "_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` before ``load_state_dict``; a returned dict is loaded instead."""
        return _add_hook(self, "_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` after ``load_state_dict``."""
        return _add_hook(self, "_optimizer_load_state_dict_post_hooks", hook, prepend)

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        if defaults.get("differentiable"):
            raise NotImplementedError("tgrad optimizers run fused kernels; differentiable=True is not supported")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += "\n"
            s += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group):
        """Add a group; options it does not give take the optimizer's defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        if names:
            if len(names) != len(param_group["params"]):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is not None:
                    if set_to_none:
                        p._grad = None      # what ``del p.grad`` does, without the property call
                    else:
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        g.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def _closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # PyTorch's name for this optimizer in "<name> does not support sparse gradients" (None: sparse grads taken)
    _sparse_name = ""

    def _with_grad(self, group):
        """(params, grads) of the group's parameters that have a gradient (PyTorch's error on a sparse one)."""
        params, grads = [], []
        for p in group["params"]:
            g = p.grad
            if g is not None:
                if g.is_sparse and self._sparse_name is not None:
                    name = self._sparse_name or type(self).__name__
                    raise RuntimeError(f"{name} does not support sparse gradients" +
                                       (", please consider SparseAdam instead" if name == "Adam" else ""))
                params.append(p)
                grads.append(g)
        return params, grads

    @staticmethod
    def _fused(name, params, grads, *states, **attrs):
        """Run the fused op ``name`` and bump the version of everything it wrote (the op has no backward:
        nothing is recorded, whatever the grad mode).  Complex tensors go in as their (..., 2) float views, as
        PyTorch's optimizers take them (view_as_real: the update is element-wise on the parts)."""
        if any(p.dtype.is_complex for p in params):
            params, grads = _as_real(params), _as_real(grads)
            states = tuple(_as_real(s) if isinstance(s, list) else s for s in states)
        r = _FUSED_REPLAY
        if r is None or not r(name, params, grads, states, attrs):
            dispatch.call(name, params, grads, *states, **attrs)
        for t in chain(params, *states):
            if t is not None:
                t._version_counter[0] += 1

    # ------------------------------------------------------------ state dicts
    def state_dict(self):
        """{"state": {index: per-parameter state}, "param_groups": [options + "params": [indices]]}."""
        for hook in self.__dict__.get("_optimizer_state_dict_pre_hooks", {}).values():
            hook(self)
        sd = self._state_dict()
        for hook in self.__dict__.get("_optimizer_state_dict_post_hooks", {}).values():
            result = hook(self, sd)
            if result is not None:
                sd = result
        return sd

    def _state_dict(self):
        mapping = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        """Load options and state; state tensors are moved/cast to their parameter's device and dtype."""
        for hook in self.__dict__.get("_optimizer_load_state_dict_pre_hooks", {}).values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._load_state_dict(state_dict)
        for hook in self.__dict__.get("_optimizer_load_state_dict_post_hooks", {}).values():
            hook(self)

    def _load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
