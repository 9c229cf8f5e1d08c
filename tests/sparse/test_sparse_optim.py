"""Optimizers on sparse gradients: SparseAdam, SGD (momentum, nesterov) and Adagrad bit-identical to PyTorch 2.13
over several steps (the float32 bit patterns below were printed by /work/venv-torch's PyTorch running the same
program), PyTorch's refusals, state_dict, clip_grad_norm_; and tests/sparse/w2v_program.py (a word2vec
skip-gram with sparse embeddings and SparseAdam) printing what PyTorch prints."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn


HERE = os.path.dirname(os.path.abspath(__file__))

# PyTorch 2.13, the program of _train below (weights as int32 views of their float32 bits)
TORCH_SPARSE_ADAM = {
    "P": [-1084302788, -1086699533, -1089096278, -1092466997, -1089545057, -1093364563, -1134878431, 1040488210,
          1049325597, 1042283318, 1050223151, 1055016638, 1062732082, 1065128826, 1066439393, 1065465411, 1066663785,
          1067862157],
    "M": [-1128378274, -1130645988, -1133365304, -1156945706, 1016837664, 1025793208, -1122824302, -1123958160,
          -1126110560, 1032197558, 1032764488, 1033331414, -1114719160, -1117155020, -1120556588, 1014118344,
          1016837660, 1019105374],
    "V": [994170817, 989971253, 983367461, 936185452, 989971256, 1007719622, 1005026672, 1001667021, 998727325,
          1019244777, 1020924604, 1022709419, 1020924604, 1016200094, 1009819403, 983367461, 989971253, 994170817],
}
TORCH_SGD_NESTEROV = [-1082643736, -1084947152, -1087250570, -1089367333, -1092075834, -1095936043, -1111245815,
                      1026220926, 1043812295, 1045186409, 1051488040, 1056094872, 1062099637, 1064216397, 1065843189,
                      1066388264, 1067539973, 1068691682]
TORCH_ADAGRAD = [-1083560939, -1085957684, -1088354429, -1090983310, -1090286906, -1094848263, -1117002260,
                 1034854225, 1047107792, 1045250720, 1051706851, 1056500339, 1061990233, 1064386977, 1066068469,
                 1065836335, 1067034709, 1068233081]


def _bits(t):
    return t.detach().reshape(-1).cpu().numpy().view(np.int32).tolist()


def _train(make_opt, steps):
    e = nn.Embedding(6, 3, sparse=True)
    with tgrad.no_grad():
        e.weight.copy_(tgrad.arange(18.).view(6, 3) / 7 - 1)
    x = tgrad.tensor([[1, 4, 1, 2], [0, 4, 4, 5], [1, 1, 1, 3]])
    w = tgrad.linspace(-1, 1, 36).view(3, 4, 3)
    opt = make_opt(e.parameters())
    for _ in range(steps):
        opt.zero_grad()
        ((e(x) * w).sum() ** 2).backward()
        opt.step()
    return e, opt


def test_sparse_adam_bit_identical_to_pytorch():
    e, opt = _train(lambda p: tgrad.optim.SparseAdam(p, lr=0.05, betas=(0.8, 0.99)), 4)
    st = opt.state[e.weight]
    assert _bits(e.weight) == TORCH_SPARSE_ADAM["P"]
    assert _bits(st["exp_avg"]) == TORCH_SPARSE_ADAM["M"]
    assert _bits(st["exp_avg_sq"]) == TORCH_SPARSE_ADAM["V"]
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 4
    assert sd["param_groups"] == [{"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-08, "maximize": False,
                                   "params": [0]}]


def test_sgd_nesterov_and_adagrad_bit_identical_to_pytorch(device):
    e, _ = _train(lambda p: tgrad.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True), 3)
    if device == "cpu":
        assert _bits(e.weight) == TORCH_SGD_NESTEROV
    else:   # cuda's sparse + sparse concatenates (add_out_sparse_cuda): grad and momentum land one after the other
        want = np.asarray(TORCH_SGD_NESTEROV, np.int32).view(np.float32)
        np.testing.assert_allclose(e.weight.detach().cpu().numpy().reshape(-1), want, rtol=2e-6, atol=0)
    e, _ = _train(lambda p: tgrad.optim.Adagrad(p, lr=0.1), 3)
    assert _bits(e.weight) == TORCH_ADAGRAD


@pytest.mark.parametrize("make,msg", [
    (lambda p: tgrad.optim.Adam(p), "Adam does not support sparse gradients, please consider SparseAdam instead"),
    (lambda p: tgrad.optim.AdamW(p), "Adam does not support sparse gradients, please consider SparseAdam instead"),
    (lambda p: tgrad.optim.RMSprop(p), "RMSprop does not support sparse gradients"),
    (lambda p: tgrad.optim.Adamax(p), "Adamax does not support sparse gradients"),
    (lambda p: tgrad.optim.SGD(p, lr=0.1, weight_decay=0.1),
     r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\) instead."),
    (lambda p: tgrad.optim.Adagrad(p, weight_decay=0.1), "weight_decay option is not compatible with sparse gradients"),
])
def test_pytorch_refusals(make, msg):
    e = nn.Embedding(4, 2, sparse=True)
    before = e.weight.detach().clone()
    opt = make(e.parameters())
    e(tgrad.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match=msg):
        opt.step()
    assert e.weight.tolist() == before.tolist()


def test_sparse_adam_refuses_dense_grads_and_bad_args():
    lin = nn.Linear(2, 2)
    opt = tgrad.optim.SparseAdam(lin.parameters())
    lin(tgrad.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam"):
        opt.step()
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        tgrad.optim.SparseAdam(lin.parameters(), lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        tgrad.optim.SparseAdam(lin.parameters(), betas=(0.9, 1.0))


def test_clip_grad_norm_refuses_sparse_grads_as_pytorch(device):
    e = nn.Embedding(4, 2, sparse=True)
    e(tgrad.tensor([1, 2])).sum().backward()
    with pytest.raises(NotImplementedError, match=f"with arguments from the 'Sparse{device.upper()}' backend"):
        nn.utils.clip_grad_norm_(e.parameters(), 0.5)


# PyTorch 2.13's output of w2v_program.py (OMP_NUM_THREADS=1 /work/venv-torch/bin/python w2v_program.py)
W2V_TORCH = """vocab 15 pairs 102
epoch 0 loss 3.452444
epoch 1 loss 3.242050
epoch 2 loss 2.804899
epoch 3 loss 2.582860
epoch 4 loss 2.598453
epoch 5 loss 2.525456
sparse grad True torch.sparse_coo torch.Size([1, 5])
near fox ['fox', 'and', 'sees', 'brown'] [1.0, 0.9259, 0.9207, 0.9066]
tensor([[[-0.4301, -0.4579, -0.1401,  0.2258, -0.3719,  0.2083, -0.4213,
           0.4135, -0.4943, -0.2245],
         [-0.5261, -0.3413, -0.3993,  0.5594, -0.3788,  0.2873, -0.4557,
           0.5608, -0.6268, -0.4524]]])
"""


def test_word2vec_program_prints_pytorchs_output():
    root = os.path.dirname(os.path.dirname(HERE))
    code = ("import sys, runpy, tgrad, tgrad.nn, tgrad.nn.functional, tgrad.optim\n"
            "sys.modules.update({'torch': tgrad, 'torch.nn': tgrad.nn, 'torch.nn.functional': tgrad.nn.functional, "
            "'torch.optim': tgrad.optim})\n"
            f"runpy.run_path({os.path.join(HERE, 'w2v_program.py')!r}, run_name='__main__')\n")
    env = dict(os.environ, PYTHONPATH=root, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.replace("tgrad.", "torch.") == W2V_TORCH
