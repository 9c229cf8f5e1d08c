import torch
import torch.nn as nn

torch.manual_seed(19)
model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 6, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(6, 2))
features, grads = {}, {}


def get_activation(name):
    def hook(module, inp, out):
        features[name] = out.detach()
    return hook


def save_grad(name):
    def hook(module, grad_input, grad_output):
        grads[name] = (None if grad_input[0] is None else grad_input[0].shape, grad_output[0].norm().item())
    return hook


handles = [model[1].register_forward_hook(get_activation('relu1')),
           model[3].register_forward_hook(get_activation('relu2')),
           model[2].register_full_backward_hook(save_grad('conv2')),
           model[6].register_full_backward_hook(save_grad('fc'))]
pre = model[0].register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
x = torch.randn(2, 3, 8, 8, requires_grad=True)
out = model(x)
out.sum().backward()
print({k: tuple(v.shape) for k, v in features.items()})
print(grads)
print(features['relu2'].mean())
for h in handles:
    h.remove()
pre.remove()
features.clear()
model(x)
print(len(features))

# Grad-CAM style: tensor hook on an intermediate activation
acts = {}
def fwd(m, i, o):
    acts['a'] = o
    o.register_hook(lambda g: acts.__setitem__('g', g))
h = model[2].register_forward_hook(fwd)
score = model(x)[:, 1].sum()
score.backward()
w = acts['g'].mean(dim=(2, 3), keepdim=True)
cam = torch.relu((w * acts['a']).sum(1))
print(cam.shape, cam.detach().max(dim=-1).values)
h.remove()

# forward hook with kwargs and a hook that replaces the output
lin = nn.Linear(3, 3)
lin.register_forward_hook(lambda m, args, kwargs, out: out * 0 + 1, with_kwargs=True)
print(lin(torch.randn(1, 3)))
state = {}
def pre_kw(m, args, kwargs):
    state['n'] = len(args)
m = nn.Identity()
m.register_forward_pre_hook(pre_kw, with_kwargs=True)
m(torch.ones(1))
print(state)
print(x.grad.shape, x.grad.abs().sum() > 0)
