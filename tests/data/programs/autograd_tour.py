import torch
import torch.nn as nn

torch.manual_seed(50)
x = torch.randn(3, requires_grad=True)
y = x * 2
y.retain_grad()
z = (y ** 2).sum()
z.backward(retain_graph=True)
print(x.grad, y.grad, x.is_leaf, y.is_leaf, y.grad_fn.name(), z.grad_fn.next_functions[0][0].name())
z.backward()
print(x.grad)
x.grad.zero_()
a = torch.randn(2, 2, requires_grad=True)
b = a @ a.T
torch.autograd.backward([b.sum(), a.mean()], grad_tensors=[torch.tensor(2.0), torch.tensor(1.0)])
print(a.grad)
w1, w2 = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
(w1 * w2).sum().backward(inputs=[w1])
print(w1.grad is not None, w2.grad)


@torch.no_grad()
def infer(m, t):
    return m(t)


m = nn.Linear(3, 2)
print(infer(m, x).requires_grad, torch.is_grad_enabled())
with torch.inference_mode():
    r = m(x)
    print(r.requires_grad, r.is_inference(), torch.is_inference_mode_enabled())
with torch.set_grad_enabled(False):
    with torch.enable_grad():
        e = m(x)
    print(e.requires_grad, m(x).requires_grad)
acc = []
p = nn.Parameter(torch.ones(2))
p.register_post_accumulate_grad_hook(lambda t: acc.append(t.grad.clone()))
h = p.register_hook(lambda g: g * 3)
(p * torch.tensor([1., 2.])).sum().backward()
print(p.grad, acc)
h.remove()
packed = []
def pack(t):
    packed.append(tuple(t.shape))
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    q = torch.randn(4, requires_grad=True)
    (q.exp() * q.sin()).sum().backward()
print(packed)
with torch.autograd.detect_anomaly():
    s = torch.tensor([1.0, 2.0], requires_grad=True)
    (s.sqrt() * 2).sum().backward()
print(s.grad)
try:
    t = torch.tensor([-1.0], requires_grad=True)
    u = t * 2
    u.backward()
    u.backward()
except RuntimeError as err:
    print(str(err)[:70])
v = torch.ones(2, requires_grad=True)
out = v.clone()
out.mul_(3)
out.sum().backward()
print(v.grad, out.grad_fn.name())
print(torch.autograd.grad((x ** 3).sum(), x, create_graph=True)[0].requires_grad)
leaf = torch.zeros(2, requires_grad=True)
try:
    leaf.add_(1)
except RuntimeError as err:
    print(str(err)[:80])
with torch.no_grad():
    leaf.add_(1)
print(leaf, leaf.requires_grad, leaf._version)
