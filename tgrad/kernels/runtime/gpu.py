"""The cuda launch path: tgrad's own context and stream, Triton's compiler and its C launcher.

A launch on ``cuda:N`` makes device N's primary context current on the calling thread (so a thread
launches where its tensors live, whatever ``set_device`` said elsewhere), takes the thread's current
stream of device N (``tgrad.cuda.stream``), finds the compiled kernel and calls Triton's C launcher.

The compiled kernel is Triton's own JIT-cache entry (``internals.jit_compiled``: the same
specialization, cache key and on-disk cache as ``kernel[grid](...)``), found once per launch site and
pointer-alignment class (``site``).  Pointers are passed as ints (Triton's launcher then skips its
per-pointer ``cuPointerGetAttribute``; the op checked the tensors' devices).  Triton's default driver is
never used, so a process that imported torch still launches through tgrad's driver and stream.

``FUNCTIONS`` maps each loaded ``CUfunction`` handle to its (JITFunction, CompiledKernel): what each cubin
runs.  The test suite's fake driver (tests/fakecuda) reads it to run a launched kernel on the host.
"""
from triton.runtime import OutOfResources

from ...memory import cuda_driver as _drv
from .direct import Ptr
from .internals import c_launch_parts, current_device_query, jit_compiled

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


def fitting(kernel, args, constexprs, options):
    """Triton's compiled kernel for a launch on the current device with the first of ``options`` (a Launch's
    candidates; None: Triton's defaults) whose shared memory fits the device's per-block opt-in limit (Triton's
    own check against the driver's attribute).  ``tgrad.kernels.aot`` tries them in the same order."""
    tried = []
    for opts in options or (None,):
        try:
            return jit_compiled(kernel, args, {**constexprs, **opts} if opts else constexprs)
        except OutOfResources as e:
            tried.append(f"{opts or 'default options'}: {e}")
    raise RuntimeError(f"{kernel.__name__} does not fit this device with any of its compile options: "
                       + "; ".join(tried))


def launch(kernel, grid, device, args, constexprs, options=None):
    """Launch once on ``device`` ("cuda" or "cuda:N"); args: Ptr objects, ints and floats."""
    index = device_index(device)
    _drv.make_current(index)
    c = Compiled(kernel, fitting(kernel, args, constexprs, options), args, constexprs)
    c.call(*_grid3(grid), _drv.current_stream_handle(index), c.template)


def site(launch):
    """The cuda side of launch site ``launch`` (a ``Launch``): a function ``run(launch, dyn)`` that launches it.

    A site's launches differ only in pointer addresses, floats and ``dynamic_args`` ints (which the JIT
    does not specialize on: ``do_not_specialize``), so the only specialization that can change between
    its calls is a pointer's 16-byte alignment; ``run`` keeps a compiled kernel per alignment class.
    Everything that does not depend on ``dyn`` is bound once, as constants of generated code: a launch is
    one C query of the thread's current device (``make_current`` when it is another), the alignment test,
    one dict lookup and the C launcher called with the parameter tuple built in place.
    """
    index = device_index(launch.device)
    pos = launch.pos
    dyn_ptr = [j for j, i in enumerate(pos) if type(launch.args[i]) is Ptr]
    compiled = {}

    def compile_(launch, dyn, align):
        args = list(launch.args)
        for i, v in zip(pos, dyn):
            a = args[i]
            args[i] = Ptr(v, a.dtype) if type(a) is Ptr else v
        c = Compiled(launch.kernel, fitting(launch.kernel, args, launch.constexprs, launch.options), args,
                     launch.constexprs)
        where = {c.slots[i]: k for k, i in enumerate(pos)}     # dyn[k] is argument pos[k]
        fn, mid = c_launch_parts(c.compiled)
        consts = dict(L=fn, gx=gx, gy=gy, gz=gz, **{f"m{j}": v for j, v in enumerate(mid)},
                      **{f"t{j}": v for j, v in enumerate(c.template) if j not in where})
        params = "".join(f"d[{where[j]}], " if j in where else f"t{j}, " for j in range(len(c.template)))
        mids = "".join(f"m{j}, " for j in range(len(mid)))
        f = compiled[align] = _generated(f"def go(s, d):\n    L(gx, gy, gz, s, {mids}({params}))\n",
                                         "go", consts)
        return f

    gx, gy, gz = _grid3(launch.grid)
    align = " | ".join(f"(d[{j}] & 15 == 0) << {k}" for k, j in enumerate(dyn_ptr)) or "0"
    return _generated(f"""def run(launch, d):
    if current() != index:
        make_current(index)
    a = {align}
    f = get(a)
    if f is None:
        f = compile_(launch, d, a)
    f(THREAD.streams.get(index, 0), d)
""", "run", dict(THREAD=_drv.THREAD, current=current_device_query(), make_current=_drv.make_current, index=index,
                 get=compiled.get, compile_=compile_))


def _generated(src, name, consts):
    """Function ``name`` of source ``src`` with the names in ``consts`` bound as closure constants."""
    names = ", ".join(consts)
    ns = {}
    body = "".join("    " + line + "\n" for line in src.splitlines())
    exec(f"def make({names}):\n{body}    return {name}\n", ns)
    return ns["make"](**consts)
