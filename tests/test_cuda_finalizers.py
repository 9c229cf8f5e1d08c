"""Finalizers of driver objects (streams, pinned host memory, events) never raise and never block.

A finalizer runs wherever the last reference dies: at interpreter exit, in another thread, inside a kernel
run (the fake driver runs kernels in its callbacks, with tgrad's launch lock held).  Destroying a stream or
freeing pinned memory waits for queued work, which there would deadlock; so the owners only hand their
handles over, and the driver releases them at the next new stream, pinned allocation or synchronize.
Each case runs in a fresh Python on the fake driver; a hang becomes a failure (``faulthandler`` exits).
"""
import pytest

import fakecuda

try:
    fakecuda.build()
    _skip = None
except fakecuda.Unavailable as e:
    _skip = str(e)

pytestmark = pytest.mark.skipif(_skip is not None, reason=_skip or "")

PRELUDE = r'''
import faulthandler, sys, threading
import numpy as np
from tgrad.memory import cuda_driver as cd
from tgrad.kernels.runtime.host_state import LOCK
x = tgrad.ones(1000, device="cuda")

def while_locked_elsewhere(fn):
    """Run fn while another thread holds the launch lock (as a kernel compile or cpu run does)."""
    held, done = threading.Event(), threading.Event()
    def holder():
        with LOCK:
            held.set()
            done.wait()
    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    faulthandler.dump_traceback_later(120, exit=True)     # a deadlock fails the test instead of hanging it
    fn()
    faulthandler.cancel_dump_traceback_later()
    done.set()
    t.join()
'''

STREAM_WHILE_LOCKED = PRELUDE + r'''
s = tgrad.cuda.Stream()
with tgrad.cuda.stream(s):
    y = x * 3                  # queued on s: the fake driver runs it at the next synchronization
holder = [s]
del s
# the stream's last reference dies while the launch lock is held elsewhere: destroying it would run its
# queued kernel, which needs that lock
while_locked_elsewhere(holder.clear)
assert len(cd._RELEASED) == 1
tgrad.cuda.synchronize()
assert not cd._RELEASED
np.testing.assert_array_equal(y.cpu().numpy(), np.full(1000, 3.0, np.float32))
assert not fakecuda.ERRORS, fakecuda.ERRORS
print("ok")
'''


def test_a_stream_collected_while_the_launch_lock_is_held_elsewhere():
    assert fakecuda.run_python(STREAM_WHILE_LOCKED).strip().endswith("ok")


PINNED_WHILE_LOCKED = PRELUDE + r'''
p = tgrad.arange(1000.0, device="cpu").pin_memory()
y = p.to("cuda", non_blocking=True) * 2     # a queued copy out of the pinned memory, then a kernel
holder = [p]
del p
# freeing pinned memory waits for the device (the queued kernel needs the lock held elsewhere)
while_locked_elsewhere(holder.clear)
assert len(cd._RELEASED) == 1
q = tgrad.ones(10, device="cpu").pin_memory()        # a new pinned allocation frees the old one first
assert not cd._RELEASED
np.testing.assert_array_equal(y.cpu().numpy(), 2 * np.arange(1000.0, dtype=np.float32))
assert not fakecuda.ERRORS, fakecuda.ERRORS
print("ok")
'''


def test_pinned_memory_collected_while_the_launch_lock_is_held_elsewhere():
    assert fakecuda.run_python(PINNED_WHILE_LOCKED).strip().endswith("ok")


INSIDE_A_KERNEL_RUN = PRELUDE + r'''
from tgrad.kernels.runtime import launcher
holder = [tgrad.cuda.Stream()]
with tgrad.cuda.stream(holder[0]):
    y = x + 1
run_cpu = launcher.run_cpu
def dropping_the_stream(*args):      # the fake driver runs y's kernel (queued on that stream) through this
    run_cpu(*args)
    holder.clear()                   # its last reference dies inside the run, on the stream being drained
launcher.run_cpu = dropping_the_stream
faulthandler.dump_traceback_later(120, exit=True)
tgrad.cuda.synchronize()
faulthandler.cancel_dump_traceback_later()
launcher.run_cpu = run_cpu
assert not holder
tgrad.cuda.synchronize()             # now released
assert not cd._RELEASED
np.testing.assert_array_equal(y.cpu().numpy(), np.full(1000, 2.0, np.float32))
assert not fakecuda.ERRORS, fakecuda.ERRORS
print("ok")
'''


def test_a_stream_collected_inside_its_own_kernel_run():
    assert fakecuda.run_python(INSIDE_A_KERNEL_RUN).strip().endswith("ok")


AT_EXIT = r'''
import builtins, os
os.dup2(1, 2)                  # the interpreter's "Exception ignored in ..." reports go to stdout
x = tgrad.ones(1000, device="cuda")
s = tgrad.cuda.Stream()
with tgrad.cuda.stream(s):
    y = x * 5
e = tgrad.cuda.Event(enable_timing=True)
e.record()
# kept by modules that are torn down after tgrad's: the finalizers run once tgrad's module globals are gone
os._kept = [s, y, e, tgrad.ones(100, device="cpu").pin_memory()]
builtins._kept = [tgrad.cuda.Stream(), tgrad.ones(7, device="cpu").pin_memory()]
print("ok")
'''


def test_finalizers_at_interpreter_exit_raise_nothing():
    out = fakecuda.run_python(AT_EXIT)
    assert out.strip().endswith("ok") and "Exception ignored" not in out, out
