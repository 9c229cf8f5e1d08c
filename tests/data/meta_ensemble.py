"""PyTorch's "Model ensembling" recipe (torch.func.stack_module_state, functional_call, vmap) with the base
model on the meta device, smaller sizes.  Its PyTorch 2.13 output is tests/data/meta_ensemble_torch.txt:
``/work/venv-torch/bin/python tests/data/meta_ensemble.py > tests/data/meta_ensemble_torch.txt``
(tests/test_meta.py runs it with ``torch`` mapped to ``tgrad`` and compares)."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(49, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


device = "cpu"
num_models = 4
data = torch.randn(10, 8, 1, 7, 7, device=device)
models = [SimpleMLP().to(device) for _ in range(num_models)]
minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
minibatch = data[0]
predictions2 = [model(minibatch) for model in models]

params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])
base_model = base_model.to("meta")
print(base_model.fc1.weight.device, base_model.fc1.weight.is_meta)
print(base_model.fc1.weight)


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


print([(k, tuple(p.shape)) for k, p in params.items()])
predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
print(tuple(predictions1_vmap.shape), predictions1_vmap.device)
print(torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5))
predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
print(torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5))
print(predictions2_vmap[3, :2])
out = base_model(torch.empty(5, 49, device="meta"))
print(out, out.grad_fn is not None)
out.sum().backward()
print(base_model.fc3.bias.grad)
