"""How a kernel runs: the launch path and the Triton internals it needs.

- ``launcher``: ``Launch``/``launch`` and the cpu/gpu fork; launch counting, the AOT recorder, block sizes.
- ``internals``: every Triton internal tgrad touches (pinned by ``tests/kernels/test_triton_internals.py``).
- ``host_state``: the rest of the process state interpreted launches run in (their lock, numpy's error
  state, glibc's heap).
- ``direct``, ``trace``: the interpreter executors for ``cpu`` (``TGRAD_EXECUTOR``).
- ``native``: C helpers the cpu executor builds on first use (the exact fma ufunc, ``fma.c``; ``aten_cpu.c``'s
  twins of the SLEEF exp/log, lane-sum and nll-cascade helpers, each call of which a tape replays as one ufunc).

Kernel families import the names below.  The launcher's switches (``EXECUTOR``, ``RECORD``: the one
launch-recording hook, ``DRY_RUN``, ``FORCE_GPU_BLOCKS``) are module globals: read and set them on
``runtime.launcher``.
"""
from .direct import Ptr as Ptr
from .launcher import COUNTER as COUNTER
from .launcher import Launch as Launch
from .launcher import Sites as Sites
from .launcher import cdiv as cdiv
from .launcher import compile_aot as compile_aot
from .launcher import elementwise_block as elementwise_block
from .launcher import gpu_blocks as gpu_blocks
from .launcher import launch as launch
from .launcher import launch_spec as launch_spec
from .launcher import next_pow2 as next_pow2
from .trace import dynamic_args as dynamic_args
