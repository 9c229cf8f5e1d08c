"""The cuda launch path: tgrad's own context and stream, Triton's compiler and its C launcher.

A launch on ``cuda:N`` makes device N's primary context current on the calling thread (so a thread
launches where its tensors live, whatever ``set_device`` said elsewhere), takes the thread's current
stream of device N (``tgrad.cuda.stream``), finds the compiled kernel and calls Triton's C launcher.

The compiled kernel is Triton's own JIT-cache entry (``internals.jit_compiled``: the same
specialization, cache key and on-disk cache as ``kernel[grid](...)``), found once per launch site and
pointer-alignment class (``Site``).  Pointers are passed as ints (Triton's launcher then skips its
per-pointer ``cuPointerGetAttribute``; the op checked the tensors' devices).  Triton's default driver is
never used, so a process that imported torch still launches through tgrad's driver and stream.

``FUNCTIONS`` maps each loaded ``CUfunction`` handle to its (JITFunction, CompiledKernel): what each cubin
runs.  The test suite's fake driver (tests/fakecuda) reads it to run a launched kernel on the host.
"""
import operator

from ...memory import cuda_driver as _drv
from .direct import Ptr
from .internals import c_launch_parts, jit_compiled

FUNCTIONS = {}


def device_index(device):
    """"cuda" -> the device current on this thread, "cuda:N" -> N."""
    return int(device[5:]) if len(device) > 5 else _drv.current_device_index()


class Compiled:
    """One compiled kernel ready to launch.

    ``template``: every parameter in order (constexprs filled in, pointers as ints); ``slots``: where the
    launch's arguments go in it; ``call(gx, gy, gz, stream, params)`` launches."""

    __slots__ = ("kernel", "compiled", "call", "template", "slots")

    def __init__(self, kernel, compiled, args, constexprs):
        self.kernel, self.compiled = kernel, compiled
        template, slots, it = [], [], iter(args)
        for p in kernel.params:
            if p.name in constexprs:
                template.append(constexprs[p.name])
            elif p.is_constexpr:
                template.append(p.default)
            else:
                slots.append(len(template))
                a = next(it)
                template.append(a.ptr if type(a) is Ptr else a)
        self.template, self.slots = template, tuple(slots)
        fn, mid = c_launch_parts(compiled)
        self.call = lambda gx, gy, gz, stream, params: fn(gx, gy, gz, stream, *mid, params)
        FUNCTIONS[compiled.function] = (kernel, compiled)


def _grid3(grid):
    g = tuple(grid)
    return g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1


def launch(kernel, grid, device, args, constexprs):
    """Launch once on ``device`` ("cuda" or "cuda:N"); args: Ptr objects, ints and floats."""
    index = device_index(device)
    _drv.make_current(index)
    c = Compiled(kernel, jit_compiled(kernel, args, constexprs), args, constexprs)
    c.call(*_grid3(grid), _drv.current_stream_handle(index), c.template)


class Site:
    """The cuda side of a launch site (``Launch``): its compiled kernels by pointer-alignment class.

    A site's launches differ only in pointer addresses, floats and ``dynamic_args`` ints (which the JIT
    does not specialize on: ``do_not_specialize``), so the only specialization that can change between
    its calls is a pointer's 16-byte alignment.  ``dyn_ptr``: which dynamic arguments are pointers.
    Everything per launch that does not depend on ``dyn`` is done once here or per compiled kernel
    (``Fast``): a launch is one context query, one dict lookup, one tuple pick and the C launcher.
    """

    __slots__ = ("index", "ctx", "get_current", "grid", "pos", "dyn_ptr", "compiled")

    def __init__(self, launch):
        self.index = device_index(launch.device)
        self.ctx = _drv.context_handle(self.index)
        self.get_current = _drv.raw("cuCtxGetCurrent")
        self.grid = _grid3(launch.grid)
        self.pos = launch.pos
        self.dyn_ptr = tuple(j for j, i in enumerate(launch.pos) if type(launch.args[i]) is Ptr)
        self.compiled = {}

    def __call__(self, launch, dyn):
        t = _drv.THREAD
        if self.get_current(t.cur_ref) or t.cur.value != self.ctx:
            _drv.make_current(self.index)
        align = 1
        for j in self.dyn_ptr:
            align = (align << 1) | (dyn[j] & 15 == 0)
        f = self.compiled.get(align)
        if f is None:
            f = self.compiled[align] = self._compile(launch, dyn)
        gx, gy, gz = self.grid
        f[0](gx, gy, gz, t.streams.get(self.index, 0), *f[1], f[2](f[3] + dyn))

    def _compile(self, launch, dyn):
        """(C launcher, mid, pick, template): ``launcher(gx, gy, gz, stream, *mid, pick(template + dyn))``
        launches (``pick(template + dyn)``: the launch's parameter tuple)."""
        args = list(launch.args)
        for i, v in zip(self.pos, dyn):
            a = args[i]
            args[i] = Ptr(v, a.dtype) if type(a) is Ptr else v
        c = Compiled(launch.kernel, jit_compiled(launch.kernel, args, launch.constexprs), args,
                     launch.constexprs)
        n = len(c.template)
        where = list(range(n))
        for k, i in enumerate(self.pos):       # dyn[k] is argument i, in parameter slot c.slots[i]
            where[c.slots[i]] = n + k
        pick = operator.itemgetter(*where) if n > 1 else (lambda seq: (seq[0],))
        return c_launch_parts(c.compiled) + (pick, tuple(c.template))
