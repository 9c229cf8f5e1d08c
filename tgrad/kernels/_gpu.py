"""The cuda launch path: tgrad's own context and stream, Triton's compiler and its C launcher.

A launch on ``cuda:N`` makes device N's primary context current on the calling thread (so a thread
launches where its tensors live, whatever ``set_device`` said elsewhere), takes the thread's current
stream of device N, finds the compiled kernel and calls Triton's C launcher with it.

The compiled kernel is Triton's own JIT-cache entry (``JITFunction.run(..., warmup=True)``: the same
specialization, cache key and on-disk cache as ``kernel[grid](...)``), looked up once per launch site and
pointer-alignment class and kept in the site's ``cache``.  Later launches pass pointer addresses as ints
(Triton's launcher then skips its per-pointer ``cuPointerGetAttribute``; tensors' devices were checked by
the op).  Triton's ``driver.active`` is swapped for a torch-free ``CudaDriver`` only around the lookup,
under ``LOCK``: a process that imported torch still launches through tgrad's driver and stream.

``FUNCTIONS`` maps each loaded ``CUfunction`` handle to its (JITFunction, CompiledKernel): what each cubin
runs.  The test suite's fake driver (tests/fakecuda) reads it to run a launched kernel on the host.
"""
import triton
from triton.runtime import driver as _triton_driver

from ..memory import cuda_driver as _drv
from ._triton import LOCK, Ptr, _lang_for_compiler

FUNCTIONS = {}
_own = [None]


def triton_driver():
    """Triton's CudaDriver with its torch-free device/stream methods, whatever is imported."""
    d = _own[0]
    if d is None:
        from triton.backends.nvidia.driver import CudaDriver
        d = CudaDriver()
        d.get_current_device = d._get_current_device
        d.get_current_stream = d._get_current_stream
        d.set_current_device = d._set_current_device
        d.get_device_capability = d._get_device_capability
        _own[0] = d
    return d


def device_index(device):
    """"cuda" -> the current device, "cuda:N" -> N."""
    return int(device[5:]) if len(device) > 5 else _drv.current_device_index()


class Compiled:
    """One compiled kernel ready to launch: Triton's C ``launch`` and what it takes besides the grid.

    ``template``: every parameter in order (constexprs filled in, pointers as ints); ``slots``: where
    the launch's arguments go in it."""

    __slots__ = ("kernel", "compiled", "function", "call", "template", "slots", "dyn_slots")

    def __init__(self, kernel, compiled, template, slots):
        self.kernel, self.compiled, self.function = kernel, compiled, compiled.function
        self.template = [a.ptr if type(a) is Ptr else a for a in template]
        self.slots = slots
        run = compiled.run                  # Triton's CudaLauncher
        if (run.global_scratch_size == 0 and run.profile_scratch_size == 0
                and not run.gsan_enabled and run.num_ctas == 1):
            c_launch, fn = run.launch, compiled.function
            head = (run.launch_cooperative_grid, run.launch_pdl, compiled.packed_metadata,
                    None, None, None, None, None, run.arg_annotations, run.kernel_signature)

            def call(gx, gy, gz, stream, params):
                c_launch(gx, gy, gz, stream, fn, *head, params)
        else:
            def call(gx, gy, gz, stream, params):
                run(gx, gy, gz, stream, compiled.function, compiled.packed_metadata, None, None, None, *params)
        self.call = call


def _template(kernel, args, constexprs):
    """(every parameter of ``kernel`` in order, constexprs and defaults filled in; the argument slots)."""
    out, slots, it = [], [], iter(args)
    for p in kernel.params:
        if p.name in constexprs:
            out.append(constexprs[p.name])
        elif p.is_constexpr:
            out.append(p.default)
        else:
            slots.append(len(out))
            out.append(next(it))
    return out, tuple(slots)


def prepare(kernel, index, args, constexprs):
    """Compile (or find in Triton's caches) ``kernel`` for these arguments on device ``index``; load it there."""
    with LOCK:
        _lang_for_compiler()
        prev = _triton_driver._active
        _triton_driver._active = triton_driver()
        try:
            compiled = kernel.run(*args, grid=(1,), warmup=True, **constexprs)
            compiled._init_handles()
        finally:
            _triton_driver._active = prev
    FUNCTIONS[compiled.function] = (kernel, compiled)
    return Compiled(kernel, compiled, *_template(kernel, args, constexprs))


def _grid3(grid):
    g = tuple(grid)
    return g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1


def launch(kernel, grid, device, args, constexprs):
    """Launch once on ``device`` ("cuda" or "cuda:N"); args: Ptr objects, ints and floats."""
    index = device_index(device)
    _drv.make_current(index)
    c = prepare(kernel, index, args, constexprs)
    params = list(c.template)
    for i, a in zip(c.slots, args):
        params[i] = a.ptr if type(a) is Ptr else a
    c.call(*_grid3(grid), _drv.current_stream_handle(index), params)


class Site:
    """The cuda side of a launch site (``Launch``): its compiled kernels by pointer-alignment class.

    A site's launches differ only in pointer addresses, floats and ``dynamic_args`` ints (which the JIT
    does not specialize on: ``do_not_specialize``), so the only specialization that can change between
    its calls is a pointer's 16-byte alignment.  ``dyn_ptr``: which dynamic arguments are pointers.
    """

    __slots__ = ("index", "grid", "pos", "dyn_ptr", "compiled")

    def __init__(self, launch):
        self.index = device_index(launch.device)
        self.grid = _grid3(launch.grid)
        self.pos = launch.pos
        self.dyn_ptr = tuple(j for j, i in enumerate(launch.pos) if type(launch.args[i]) is Ptr)
        self.compiled = {}

    def __call__(self, launch, dyn):
        index = self.index
        _drv.make_current(index)
        align = 1
        for j in self.dyn_ptr:
            align = (align << 1) | (dyn[j] & 15 == 0)
        c = self.compiled.get(align)
        if c is None:
            args = list(launch.args)
            for i, v in zip(self.pos, dyn):
                a = args[i]
                args[i] = Ptr(v, a.dtype) if type(a) is Ptr else v
            c = self.compiled[align] = prepare(launch.kernel, index, args, launch.constexprs)
            c.dyn_slots = tuple(c.slots[i] for i in self.pos)
        params = c.template.copy()
        for i, v in zip(c.dyn_slots, dyn):
            params[i] = v
        gx, gy, gz = self.grid
        c.call(gx, gy, gz, _drv.current_stream_handle(index), params)
