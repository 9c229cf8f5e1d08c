"""Learning-rate schedulers with PyTorch's (recursive) formulas (``torch.optim.lr_scheduler``).

A scheduler writes ``group["lr"]`` as a Python float; the optimizers pass it
to their kernels as a runtime scalar, so a new rate every step costs no
recompilation.  ``step()`` goes after ``optimizer.step()``.
"""
from ._base import (ConstantLR, CosineAnnealingLR, EPOCH_DEPRECATION_WARNING, ExponentialLR, LambdaLR, LinearLR,
                    LRScheduler, MultiplicativeLR, MultiStepLR, PolynomialLR, StepLR)
from ._combined import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from ._cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR

_LRScheduler = LRScheduler

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
           "EPOCH_DEPRECATION_WARNING", "ExponentialLR", "LambdaLR", "LinearLR", "LRScheduler", "MultiplicativeLR",
           "MultiStepLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR"]
