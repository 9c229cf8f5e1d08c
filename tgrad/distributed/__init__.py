"""``tgrad.distributed``: process groups and collectives with PyTorch's names, on MPI (cpu tensors, through
mpi4py), gloo (cpu tensors over TCP) or NCCL (cuda tensors, by ctypes). Start the ranks with
``python -m tgrad.distributed.run --nproc-per-node N script.py`` (or ``mpiexec -n N python script.py``), or with
any launcher that sets ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT`` (``tgrad.multiprocessing.spawn``).
"""
from .distributed_c10d import (Backend, DistBackendError, DistError, DistNetworkError, DistStoreError,  # noqa: F401
                               GroupMember, ProcessGroup, ReduceOp, Work, all_gather, all_gather_into_tensor,
                               all_reduce, barrier, broadcast, default_pg_timeout, destroy_process_group, gather,
                               get_backend, get_global_rank, get_process_group_ranks, get_rank, get_world_size,
                               init_process_group, irecv, is_available, is_gloo_available, is_initialized,
                               is_mpi_available, is_nccl_available, is_torchelastic_launched, isend, new_group,
                               recv, reduce, reduce_scatter_tensor, scatter, send)
from ._object import (all_gather_object, broadcast_object_list, gather_object,  # noqa: F401,E402
                      scatter_object_list)
