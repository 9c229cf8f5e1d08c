"""``DataLoader``: batches from a dataset, in order or shuffled, optionally loaded by worker processes.

``num_workers > 0`` uses worker *processes* (forked by default, like PyTorch on
Linux).  Each worker fetches and collates whole batches; a batch crosses the
process boundary as host numpy arrays (a tensor pickles as its numpy copy, see
``Tensor.__reduce_ex__``) and the main process builds the tensors.  Processes
rather than threads, as ``python benchmarks/bench_dataloader.py`` measures (one
epoch of scikit-learn's digits, CPU seconds of the main process and of the
workers, with 2 threads and with 2 processes): with threads the main process
keeps all the CPU time, with processes it keeps a small share.  Per-sample
work is Python (tgrad indexing, collate, augmentation) that holds the GIL, and cpu kernel launches are serialized by the interpreter lock, so
threads leave all of it in the main process; processes take it off the
training loop's process (and spread it over the cores) for the price of a
fork per epoch (``persistent_workers=True`` avoids it) and one pickle per
batch.  Worker errors are re-raised in the main process with the worker's
traceback text; a worker that dies raises instead of hanging.
"""
import atexit
import itertools
import math
import multiprocessing
import multiprocessing.util
import os
import queue
import random
import sys
import traceback
import warnings

import numpy as np

from ... import dtypes as D
from ..._creation import empty
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_POLL = 0.5          # seconds between liveness checks of the workers while the main process waits
_WORKER_POLL = 0.2   # seconds between checks of the done event / the parent's liveness in a worker
# Set at interpreter exit before multiprocessing's own exit function (atexit runs last-registered first), which
# terminates the daemonic workers: a worker killed inside ``done_event.is_set()`` holds the event's lock, so a
# shutdown after that (an iterator of persistent workers collected at exit) would wait on it forever.  PyTorch's
# ``python_exit_status`` does the same.
_EXITING = [False]
atexit.register(_EXITING.__setitem__, 0, True)


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: id, num_workers, seed, dataset (the worker's copy)."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset})"


_worker_info = None


def get_worker_info():
    """The current worker's WorkerInfo, or None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker: its type and formatted traceback, re-raised in the main process."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError repr()s its message; keep the traceback readable."""

    def __repr__(self):
        return self


class _InfiniteConstantSampler(Sampler):
    """None forever: the 'indices' of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


class _IterableDatasetStopIteration:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch."""


class _Fetcher:
    """Turns an index (or a list of indices) into a collated batch."""

    def __init__(self, dataset, iterable, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.dataset_iter = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index):
        if self.dataset_iter is None:
            if self.auto_collation:
                getitems = getattr(self.dataset, "__getitems__", None)
                data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
            else:
                data = self.dataset[index]
            return self.collate_fn(data)
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def _worker_loop(dataset, iterable, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last, seed,
                 init_fn, worker_id, num_workers, parent_pid):
    """A worker process: seeds itself, then fetches (idx, index) tasks until it gets None or ``done_event``."""
    global _worker_info
    from ... import random as tgrad_random
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
    tgrad_random.manual_seed(seed)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where=where)
    done = False
    while not done_event.is_set():
        try:
            task = index_queue.get(timeout=_WORKER_POLL)
        except queue.Empty:
            if os.getppid() != parent_pid:       # the main process is gone: do not linger
                return
            continue
        if task is None:
            break
        if isinstance(task, _ResumeIteration):
            data_queue.put((task, None))
            done = False
            if init_error is None:
                fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
            continue
        if done:
            continue
        idx, index = task
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                data = _IterableDatasetStopIteration(worker_id) if iterable else ExceptionWrapper(where=where)
                done = iterable
            except Exception:
                data = ExceptionWrapper(where=where)
        data_queue.put((idx, data))
    data_queue.cancel_join_thread()


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._pin = False
        if loader.pin_memory:
            from ... import cuda
            if not cuda.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device "
                              "pinned memory won't be used.", stacklevel=3)
            else:
                self._pin = True
        self._sampler_iter = iter(self._index_sampler)
        # PyTorch: torch.empty((), dtype=torch.int64).random_(generator=loader.generator), every iterator
        self._base_seed = int(empty((), dtype=D.int64, device="cpu" if loader.generator is None else loader.generator.device)
                              .random_(generator=loader.generator).item())

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)

    def __next__(self):
        data = self._next_data()
        return _pin_memory(data) if self._pin else data


def _pin_memory(data):
    """Tensors of a batch (in tuples, lists, dicts, namedtuples) copied to pinned host memory."""
    from ...tensor import Tensor
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, dict):
        return type(data)({k: _pin_memory(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin_memory(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_pin_memory(v) for v in data)
    return data


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _Fetcher(self._dataset, self._iterable, self._auto_collation, self._collate_fn,
                                 self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(next(self._sampler_iter))


class _MultiProcessIter(_BaseIter):
    """Round-robin tasks to workers, ``prefetch_factor`` outstanding per worker, results in order."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        self._data_queue = ctx.Queue()
        # set at shutdown: workers also stop on it when the None sentinel cannot be delivered (e.g. the
        # queues were already finalized by the garbage collector)
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, daemon=True,
                            args=(self._dataset, self._iterable, iq, self._data_queue, self._done_event,
                                  self._auto_collation, self._collate_fn, self._drop_last, self._base_seed + i,
                                  loader.worker_init_fn, i, self._num_workers, os.getpid()))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown = False
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for iq in self._index_queues:
                iq.put(_ResumeIteration())
            resumed = 0
            while resumed < self._num_workers:
                tag, _ = self._get_data()
                if isinstance(tag, _ResumeIteration):
                    resumed += 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            w = next(self._worker_cycle)
            if self._workers_status[w]:
                break
        else:
            return
        self._index_queues[w].put((self._send_idx, index))
        self._task_info[self._send_idx] = (w,)
        self._send_idx += 1

    def _get_data(self):
        waited = 0.0
        while True:
            step = _POLL if not self._timeout else min(_POLL, self._timeout - waited)
            try:
                return self._data_queue.get(timeout=step)
            except queue.Empty:
                waited += step
                dead = [w for w, alive in zip(self._workers, self._workers_status) if alive and not w.is_alive()]
                if dead:
                    self._shutdown_workers()
                    pids = ", ".join(str(w.pid) for w in dead)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
                if self._timeout and waited >= self._timeout:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            idx, data = self._get_data()
            if isinstance(data, _IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    del self._task_info[idx]
                    return self._process(data)
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self):
        if self._shutdown or _EXITING[0]:      # at exit multiprocessing terminates the daemonic workers itself
            return
        self._shutdown = True
        self._done_event.set()
        for iq in self._index_queues:
            iq.put(None)
        for w in self._workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues + [self._data_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        if not getattr(self, "_shutdown", True):
            self._shutdown_workers()


class DataLoader:
    """Iterate over ``dataset`` in batches (PyTorch's signature and argument checks).

    ``shuffle=True`` draws a new permutation every epoch from ``generator`` (or
    from the default generator, so ``tgrad.manual_seed`` makes it reproducible).
    ``pin_memory=True`` (with a GPU) returns batches in pinned host memory, for ``non_blocking=True`` copies.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _mp_context(multiprocessing_context, num_workers)
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if num_workers > (cpus or 0):
            warnings.warn(f"This DataLoader will create {num_workers} worker processes in total. Our suggested max "
                          f"number of worker in current system is {cpus}, which is smaller than what this DataLoader "
                          "is going to create. Please be aware that excessive worker creation might get DataLoader "
                          "running slow or even freeze, lower the worker number to avoid potential slowness/freeze "
                          "if necessary.", stacklevel=2)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        return _SingleProcessIter(self) if self.num_workers == 0 else _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _mp_context(ctx, num_workers):
    if ctx is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")
    if isinstance(ctx, str):
        valid = multiprocessing.get_all_start_methods()
        if ctx not in valid:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {valid!r}, "
                             f"but got multiprocessing_context={ctx!r}")
        ctx = multiprocessing.get_context(ctx)
    if not isinstance(ctx, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={ctx}")
    return ctx
