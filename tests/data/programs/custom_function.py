import torch
from torch.autograd import Function, gradcheck
from torch.autograd.function import once_differentiable

torch.manual_seed(33)


class STEQuantize(Function):
    @staticmethod
    def forward(ctx, x, levels):
        ctx.save_for_backward(x)
        ctx.levels = levels
        return torch.round(x * levels) / levels

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype), None


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y


class SortWithIdx(Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return vals, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, gv, gi):
        idx, = ctx.saved_tensors
        return torch.zeros_like(gv).scatter_(-1, idx, gv)


class Clamp01(Function):
    @staticmethod
    def forward(x):
        return x.clamp(0, 1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * ((x > 0) & (x < 1))

    @staticmethod
    def jvp(ctx, t):
        return t


x = torch.randn(6, requires_grad=True)
y = STEQuantize.apply(x * 2, 4)
y.sum().backward()
print(y, x.grad)
xd = torch.randn(4, dtype=torch.double, requires_grad=True)
print(gradcheck(MyExp.apply, (xd,)), torch.autograd.gradgradcheck(MyExp.apply, (xd,)))
v, i = SortWithIdx.apply(x)
print(i.requires_grad, v.grad_fn is not None)
(v * torch.arange(6.)).sum().backward()
print(x.grad)
z = Clamp01.apply(torch.tensor([-0.5, 0.5, 1.5], requires_grad=True))
print(z, type(z.grad_fn).__name__)
w = torch.nn.Parameter(torch.randn(3, 3))
lin = lambda inp: MyExp.apply(inp @ w).sum()
inp = torch.randn(2, 3)
lin(inp).backward()
print(w.grad.shape, w.grad.sum())
try:
    out = SortWithIdx.apply(x)[0]
    g = torch.autograd.grad(out.sum(), x, create_graph=True)[0]
    g.sum().backward()
except RuntimeError as e:
    print('RuntimeError', str(e)[:60])
