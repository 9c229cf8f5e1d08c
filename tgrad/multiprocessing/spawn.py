"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` new processes and join them, with
PyTorch's errors: a child that raised -> ``ProcessRaisedException`` carrying its traceback; a child that
exited non-zero or was killed by a signal -> ``ProcessExitedException``. On the first failure the other
children are terminated (SIGTERM, then SIGKILL after 30 s)."""
import contextlib
import ctypes
import importlib
import importlib.abc
import importlib.util
import multiprocessing
import multiprocessing.connection
import multiprocessing.spawn
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """Exception raised when a process failed due to an exception raised by the code."""


class ProcessExitedException(ProcessException):
    """Exception raised when a process failed due to signal or exited with a specific code."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _die_with_parent():
    """SIGINT when the parent dies (Linux prctl PR_SET_PDEATHSIG), so no child outlives its launcher."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, signal.SIGINT)
        except (OSError, AttributeError):
            pass


class _TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import torch.X`` gives ``tgrad.X``: installed in a spawned child whose parent ran a PyTorch program on
    tgrad under such an alias (the child re-imports the parent's main module, which imports torch)."""

    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return importlib.import_module("tgrad" + spec.name[5:])

    def exec_module(self, module):
        pass


def _install_torch_alias():
    if not any(isinstance(f, _TorchAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchAlias())


class _AliasMarker:
    """Unpickled by the child with its preparation data, before the main module: installs the alias."""

    def __reduce__(self):
        return _install_torch_alias, ()


@contextlib.contextmanager
def _torch_alias_for_children(start_method):
    """While starting "spawn" children: if ``torch`` is tgrad here, have the children alias it too."""
    torch = sys.modules.get("torch")
    if start_method != "spawn" or torch is None or getattr(torch, "__name__", None) != "tgrad":
        yield
        return
    orig = multiprocessing.spawn.get_preparation_data
    def prep(name):
        return dict(orig(name), tgrad_torch_alias=_AliasMarker())
    multiprocessing.spawn.get_preparation_data = prep
    try:
        yield
    finally:
        multiprocessing.spawn.get_preparation_data = orig


def _wrap(fn, i, args, error_file):
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass                                   # SIGINT: killed by the parent
    except Exception:
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.error_files, self.processes = error_files, processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout):
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0, end - time.monotonic()))

    def join(self, timeout=None, grace_period=None):
        """Wait (at most ``timeout`` s) for a child to finish. True when all have finished successfully, False
        while some still run; on a failed child, stop the others and raise its error."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        failed = self.processes[error_index]
        if not os.access(self.error_files[error_index], os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {error_index:d} terminated with signal {name}",
                                             error_index=error_index, error_pid=failed.pid, exit_code=code,
                                             signal_name=name)
            raise ProcessExitedException(f"process {error_index:d} terminated with exit code {code:d}",
                                         error_index=error_index, error_pid=failed.pid, exit_code=code)
        with open(self.error_files[error_index], "rb") as fh:
            trace = pickle.load(fh)
        os.unlink(self.error_files[error_index])
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n" + trace
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes (``start_method``: "spawn", "fork" or "forkserver") running ``fn(i, *args)``;
    join them (None) or return their ``ProcessContext`` (``join=False``)."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    with _torch_alias_for_children(start_method):
        for i in range(nprocs):
            tf = tempfile.NamedTemporaryFile(prefix="tgrad-errorfile-", suffix=".pickle", delete=False)
            tf.close()
            os.unlink(tf.name)                     # the child creates it only if it raises
            p = ctx.Process(target=_wrap, args=(fn, i, args, tf.name), daemon=daemon)
            p.start()
            processes.append(p)
            error_files.append(tf.name)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawn ``nprocs`` processes that run ``fn(i, *args)`` (``fn`` defined at the top level of a module, so it
    pickles). If one exits non-zero, the others are killed and its error is raised here (with the child's
    traceback when it raised). Returns None if ``join``, else the ``ProcessContext``."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      f"start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
