"""``DistributedDataParallel``: one model replica per process, gradients averaged across the processes.

At construction the parameters and buffers of rank 0 are broadcast to every rank (after checking that
all ranks hold the same parameter shapes). The parameters that require a gradient are put into
buckets (reverse registration order, about the order backward produces their gradients; the first
bucket 1 MiB, the others ``bucket_cap_mb``). Each parameter's post-accumulate-grad hook copies its
``.grad`` (divided by the world size) into its bucket; when a bucket is full, its all-reduce (SUM) is
started asynchronously while backward goes on; buckets start in the same order on every rank. When
the last bucket has started, the reduced buckets are copied back into ``.grad``: after
``loss.backward()`` every rank holds the average of the ranks' gradients.

As in PyTorch, the wrapped model is ``ddp.module`` and ``ddp.state_dict()`` has its keys with the
prefix ``module.``: save ``ddp.module.state_dict()`` to load the checkpoint into an unwrapped model
(or strip the prefix with ``nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, "module.")``).
"""
from contextlib import contextmanager

from ... import distributed as dist
from ... import dtypes
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ..._creation import tensor, zeros
from ...distributed.distributed_c10d import _group
from ..._functional import cat
from ...tensor import Tensor
from ..modules.module import Module

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


def _broadcast_coalesced(pg, tensors, src=0):
    """Overwrite ``tensors`` with rank ``src``'s values: one broadcast per dtype of their concatenation."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with no_grad():
        for group in by_dtype.values():
            flat = cat([t.detach().reshape(-1) for t in group])
            dist.broadcast(flat, src=pg._ranks[src], group=pg)
            off = 0
            for t in group:
                t.copy_(flat[off:off + t.numel()].view(t.shape))
                off += t.numel()


def _find_tensors(obj):
    """The tensors in a forward's output (nested in lists, tuples, dicts)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    return []


class _Bucket:
    def __init__(self, params, indices):
        self.params, self.indices = params, indices
        self.flat = zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
        self.slots, off = [], 0
        for p in params:
            self.slots.append(self.flat[off:off + p.numel()])
            off += p.numel()
        self.pending, self.work = len(params), None


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``loss.backward()`` leaves on every rank the gradients averaged over the ranks.

    Each rank gets its own share of the data (``DistributedSampler``), runs forward and backward on it;
    an optimizer step then moves every replica identically. ``no_sync()`` skips the averaging
    (gradient accumulation); frozen parameters (``requires_grad=False``) are left alone.
    ``find_unused_parameters=True`` finds, after each forward, the parameters its output does not depend
    on and counts them as reduced (with a zero gradient); without it, such a parameter makes the next
    forward raise PyTorch's "Expected to have finished reduction" error.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, init_sync=True):
        super().__init__()
        if gradient_as_bucket_view:
            raise ValueError("gradient_as_bucket_view=True is not supported by tgrad's DistributedDataParallel")
        self.module = module
        pg = self.process_group = _group(process_group)
        self.dim, self.broadcast_buffers = dim, broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._params = params
        self._verify_same_model(params)
        if init_sync:
            _broadcast_coalesced(pg, list(module.parameters()) + list(module.buffers()))
        first = _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._buckets = self._make_buckets(params, first)
        self._where = {}
        for b in self._buckets:
            for k, i in enumerate(b.indices):
                self._where[i] = (b, k)
        self._hooks = [p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)]
        self._sync, self._require_finalize, self._ready, self._next = False, False, set(), 0

    def _verify_same_model(self, params):
        """Every rank has the same number of parameters, with the same shapes and dtypes (else raise everywhere)."""
        import zlib

        import numpy as np
        pg = self.process_group
        sig = np.array([len(params), zlib.crc32(repr([(tuple(p.shape), p.dtype.name) for p in params]).encode())],
                       np.int64)
        every = pg._backend.allgather_host(sig, pg._timeout, "DistributedDataParallel()")
        for r in range(pg.size()):
            if every[r][0] != every[0][0]:
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {pg._ranks[0]} has "
                                   f"{every[0][0]} params, while rank {pg._ranks[r]} has inconsistent "
                                   f"{every[r][0]} params.")
            if every[r][1] != every[0][1]:
                raise RuntimeError(f"DDP expects same model across all ranks, but the parameter shapes or dtypes "
                                   f"of rank {pg._ranks[r]} differ from those of rank {pg._ranks[0]}.")

    def _make_buckets(self, params, cap):
        """Parameters in reverse order, one open bucket per dtype and device; a bucket closes when it reaches
        its cap (``cap`` for the first, ``bucket_cap_mb`` after)."""
        done, open_ = [], {}
        for i in reversed(range(len(params))):
            p = params[i]
            key = (p.dtype, str(p.device))
            b = open_.setdefault(key, ([], [], [0]))
            b[0].append(p)
            b[1].append(i)
            b[2][0] += p.nbytes
            if b[2][0] >= cap:
                done.append(_Bucket(b[0], b[1]))
                del open_[key]
                cap = self.bucket_bytes_cap
        done += [_Bucket(b[0], b[1]) for b in open_.values()]
        return done

    # ------------------------------------------------------------ the iteration
    def forward(self, *inputs, **kwargs):
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            self._check_prior_reduction_finished()
        if self.broadcast_buffers and self.process_group.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                _broadcast_coalesced(self.process_group, buffers)
        output = self.module(*inputs, **kwargs)
        self._sync, self._ready, self._next = sync, set(), 0
        for b in self._buckets:
            b.pending, b.work = len(b.params), None
        if sync and self.find_unused_parameters:
            self._used = self._reachable(_find_tensors(output))
            for i, p in enumerate(self._params):
                if i not in self._used:
                    b, k = self._where[i]
                    with no_grad():
                        b.slots[k].zero_()
                    self._mark_ready(i)
        return output

    def _reachable(self, outputs):
        """Indices of the parameters the autograd graph of ``outputs`` leads to."""
        index = {id(p): i for i, p in enumerate(self._params)}
        seen, used = set(), set()
        stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            var = getattr(node, "variable", None)
            if var is not None and id(var) in index:
                used.add(index[id(var)])
            stack.extend(n for n, _ in node.next_functions)
        return used

    def _check_prior_reduction_finished(self):
        if not self._require_finalize:
            return
        unmarked = [i for i in range(len(self._params)) if i not in self._ready]
        msg = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
               "indicates that your module has parameters that were not used in producing loss. ")
        outputs = "making sure all `forward` function outputs participate in calculating loss. "
        bug = ("\nIf you already have done the above, then the distributed data parallel module wasn't able to "
               "locate the output tensors in the return value of your module's `forward` function. Please include "
               "the loss function and the structure of the return value of `forward` of your module when reporting "
               "this issue (e.g. list, dict, iterable).")
        if not self.find_unused_parameters:
            msg += ("You can enable unused parameter detection by passing the keyword argument "
                    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n")
        else:
            msg += ("Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` "
                    "outputs participate in computing loss. You can fix this by ")
        msg += outputs + bug
        msg += (f"\nParameter indices which did not receive grad for rank {dist.get_rank()}: "
                f"{' '.join(map(str, unmarked))}\n In addition, you can set the environment variable "
                "TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out information about which particular "
                "parameters did not receive gradient on this rank as part of this error")
        raise RuntimeError(msg)

    def _hook(self, i):
        def hook(p):
            if not self._sync:
                return
            b, k = self._where[i]
            if i in self._ready:
                raise RuntimeError(f"Expected to mark a variable ready only once. This error is caused by one of "
                                   f"the following reasons: 1) Use of a module parameter outside the `forward` "
                                   f"function. 2) Reused parameters in multiple reentrant backward passes. "
                                   f"Parameter at index {i} has been marked as ready twice.")
            with no_grad():
                b.slots[k].copy_(p.grad.reshape(-1))
            self._mark_ready(i)
        return hook

    def _mark_ready(self, i):
        self._require_finalize = True
        self._ready.add(i)
        b, _ = self._where[i]
        b.pending -= 1
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            nb = self._buckets[self._next]
            with no_grad():
                nb.flat.div_(self.process_group.size())
            nb.work = self.process_group._backend.allreduce(nb.flat, dist.ReduceOp.SUM)
            self._next += 1
        if self._next == len(self._buckets) and len(self._ready) == len(self._params):
            self._finalize()

    def _finalize(self):
        """Wait for the buckets, then copy them into ``.grad`` (parameters no rank used keep theirs)."""
        pg = self.process_group
        globally_used = None
        if self.find_unused_parameters:
            used = tensor([int(i in self._used) for i in range(len(self._params))], dtype=dtypes.int32,
                          device=self._params[0].device)
            pg._backend.allreduce(used, dist.ReduceOp.MAX).wait()
            globally_used = used.tolist()
        with no_grad():
            for b in self._buckets:
                b.work.wait()
                for k, (p, i) in enumerate(zip(b.params, b.indices)):
                    if globally_used is not None and not globally_used[i]:
                        continue
                    g = b.slots[k].view(p.shape)
                    if p.grad is None:
                        p.grad = g.clone()
                    else:
                        p.grad.copy_(g)
        self._require_finalize, self._sync = False, False

    @contextmanager
    def no_sync(self):
        """Forward/backward passes inside accumulate local gradients without averaging them; the first
        forward and backward after the block average the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
