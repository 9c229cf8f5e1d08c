"""A numpy model of ATen's cpu float32 2-norm over the last dim (norm_kernel_tensor_iterator_impl's vectorized
path in aten/src/ATen/native/cpu/ReduceOpsKernel.cpp, AVX2: 8 lanes): the squares of the K // 8 vectors added
lane-wise left to right (each square rounded: the compiler does not fuse ``acc_vec += x * x`` here), the lanes
added left to right, then the tail's squares one by one, each fused (fma); the square root.  Checked bit for bit against PyTorch
2.13's torch.linalg.vector_norm on this machine's AVX2 build."""
import numpy as np

from .aten_softmax import fma

f32 = np.float32


def vector_norm2_lastdim(x):
    """||x||_2 over the last axis of float32 x (R, K)."""
    x = np.asarray(x, f32)
    K = x.shape[-1]
    nv = K // 8
    acc = np.zeros(x.shape[:-1] + (8,), f32)
    for v in range(nv):
        xv = x[..., v * 8:(v + 1) * 8]
        acc = acc + xv * xv
    b = acc[..., 0]
    for j in range(1, 8):
        b = b + acc[..., j]
    for d in range(nv * 8, K):
        b = fma(x[..., d], x[..., d], b)
    return np.sqrt(b)
