"""Autograd: graph nodes, the engine, grad modes, custom Function, gradcheck."""
from . import anomaly, engine, forward_ad, function, functional, grad_mode, graph
from .anomaly import detect_anomaly, set_detect_anomaly
from .engine import backward, grad
from .function import Function, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import gradcheck, gradgradcheck
from .graph import Node
from .variable import Variable

__all__ = ["Function", "Node", "Variable", "anomaly", "backward", "detect_anomaly", "enable_grad", "engine", "forward_ad",
           "function", "functional", "grad", "grad_mode", "gradcheck", "gradgradcheck", "graph", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "no_grad", "once_differentiable",
           "set_detect_anomaly", "set_grad_enabled"]
