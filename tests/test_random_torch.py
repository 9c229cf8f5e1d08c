"""tgrad's cpu generator draws PyTorch's numbers: every sampling function, bit for bit.

Each case below is plain PyTorch code run with ``torch`` = tgrad.  REF holds, per case, the SHA-256 of the
result (as float64, or int64 for integer results) and its first values, computed by running the same cases
with PyTorch 2.13 (CPU build, on this project's AMD AVX2 machine) in /work/venv-torch:

    /work/venv-torch/bin/python tests/test_random_torch.py      # prints REF from PyTorch

(An Intel cpu would make PyTorch's bernoulli_/dropout use MKL's stream instead; tgrad follows the AMD path.)
"""
import hashlib

import numpy as np

try:
    import pytest
except ImportError:        # the PyTorch venv that prints REF has no pytest
    pytest = None

CPU_ONLY = True     # PyTorch's cpu random stream (cuda keeps Philox): runs on cpu under --device cuda (conftest)

def cases(torch):
    C = {}
    def case(name):
        def deco(f):
            C[name] = f
            return f
        return deco
    def arr(t):
        return t.detach().float().numpy() if t.dtype in (torch.bfloat16,) else t.detach().numpy()
    for n in (1, 3, 15, 16, 17, 33, 1000):
        C[f'randn{n}'] = (lambda n: lambda: (torch.manual_seed(n), arr(torch.randn(n)))[1])(n)
        C[f'rand{n}'] = (lambda n: lambda: (torch.manual_seed(n), arr(torch.rand(n)))[1])(n)
    for dt in ('float64', 'float16', 'bfloat16'):
        for n in (5, 40):
            C[f'randn_{dt}_{n}'] = (lambda dt, n: lambda: (torch.manual_seed(1), arr(torch.randn(n, dtype=getattr(torch, dt))))[1])(dt, n)
            C[f'rand_{dt}_{n}'] = (lambda dt, n: lambda: (torch.manual_seed(1), arr(torch.rand(n, dtype=getattr(torch, dt))))[1])(dt, n)
            C[f'unif_{dt}_{n}'] = (lambda dt, n: lambda: (torch.manual_seed(1), arr(torch.empty(n, dtype=getattr(torch, dt)).uniform_(-0.6, 1.7)))[1])(dt, n)
            C[f'normal_{dt}_{n}'] = (lambda dt, n: lambda: (torch.manual_seed(1), arr(torch.empty(n, dtype=getattr(torch, dt)).normal_(0.3, 1.7)))[1])(dt, n)
    @case('seq')
    def _():
        torch.manual_seed(0)
        return np.concatenate([arr(torch.randn(3)), arr(torch.randn(3)), arr(torch.rand(2)), arr(torch.randn(20)), arr(torch.randn(1))])
    @case('randn_2d_T')
    def _():
        torch.manual_seed(2); x = torch.empty(5, 6).t(); x.normal_(); return arr(x)
    @case('unif_2d_T')
    def _():
        torch.manual_seed(2); x = torch.empty(5, 6).t(); x.uniform_(-2, 3); return arr(x)
    @case('randint')
    def _():
        torch.manual_seed(3); return np.concatenate([arr(torch.randint(10, (50,))), arr(torch.randint(-7, 2**40, (9,))), arr(torch.randint(3, 9, (4,), dtype=torch.int32)).astype(np.int64)])
    @case('randint_f')
    def _():
        torch.manual_seed(3); return arr(torch.randint(0, 100, (7,), dtype=torch.float32))
    @case('randperm')
    def _():
        torch.manual_seed(4); return np.concatenate([arr(torch.randperm(10)), arr(torch.randperm(1)), arr(torch.randperm(100))])
    @case('like')
    def _():
        torch.manual_seed(5); x = torch.zeros(3, 7)
        return np.concatenate([arr(torch.rand_like(x)).ravel(), arr(torch.randn_like(x)).ravel(), arr(torch.randint_like(x, 4)).ravel()])
    @case('linear')
    def _():
        torch.manual_seed(0); m = torch.nn.Linear(3, 2); c = torch.nn.Conv2d(2, 3, 3); e = torch.nn.Embedding(4, 3)
        return np.concatenate([arr(p).ravel() for p in list(m.parameters()) + list(c.parameters()) + list(e.parameters())])
    @case('state')
    def _():
        torch.manual_seed(7); torch.randn(3); s = torch.get_rng_state(); a = arr(torch.randn(5)); torch.set_rng_state(s); b = arr(torch.randn(5))
        return np.concatenate([a, b, s.numpy().astype(np.float32)])
    @case('gen')
    def _():
        g = torch.Generator(); g.manual_seed(11); return np.concatenate([arr(torch.rand(4, generator=g)), arr(torch.randn(20, generator=g))])
    @case('dropout')
    def _():
        torch.manual_seed(0); x = torch.randn(6, 7); F = torch.nn.functional
        a = F.dropout(x, 0.3); b = torch.nn.Dropout(0.5)(x); c = F.dropout(x.double(), 0.2)
        d = F.dropout2d(torch.ones(2, 3, 2, 2), 0.4); e = F.dropout(x, 1.0); h = F.dropout(x.half(), 0.25)
        return np.concatenate([arr(a).ravel(), arr(b).ravel(), arr(c).ravel().astype(np.float32), arr(d).ravel(), arr(e).ravel(), arr(h).ravel().astype(np.float32), arr(torch.rand(2))])
    @case('dropout_grad')
    def _():
        torch.manual_seed(0); x = torch.randn(5, 4, requires_grad=True)
        torch.nn.functional.dropout(x, 0.3).sum().backward(); return arr(x.grad)
    @case('bernoulli')
    def _():
        torch.manual_seed(1); p = torch.rand(3, 5)
        a = torch.bernoulli(p); b = torch.empty(4, 3).bernoulli_(0.3); c = torch.bernoulli(p.double()); d = p.bernoulli()
        e = torch.empty(2, 5, dtype=torch.float64).bernoulli_(p[0]); f = torch.bernoulli(p, 0.7)
        return np.concatenate([arr(a).ravel(), arr(b).ravel(), arr(c).ravel(), arr(d).ravel(), arr(e).ravel(), arr(f).ravel(), arr(torch.rand(2)).astype(np.float64)])
    @case('dists')
    def _():
        torch.manual_seed(2); r = []
        for dt in (torch.float32, torch.float64, torch.float16):
            r += [arr(torch.empty(20, dtype=dt).exponential_(1.5)), arr(torch.empty(20, dtype=dt).geometric_(0.3)),
                  arr(torch.empty(20, dtype=dt).cauchy_(0.5, 2.0)), arr(torch.empty(7, dtype=dt).log_normal_(0.2, 0.5))]
        r.append(arr(torch.randn(3)))
        return np.concatenate([x.astype(np.float64) for x in r])
    @case('random_')
    def _():
        torch.manual_seed(3); r = []
        for dt in (torch.int64, torch.int32, torch.float32, torch.float64, torch.uint8, torch.int16, torch.float16):
            r += [arr(torch.empty(6, dtype=dt).random_()), arr(torch.empty(6, dtype=dt).random_(7)), arr(torch.empty(6, dtype=dt).random_(2, 9))]
        r += [arr(torch.empty(9, dtype=torch.bool).random_()), arr(torch.empty(6, dtype=torch.int64).random_(-2**63, None)), arr(torch.empty(4, dtype=torch.int64).random_(5, None)), arr(torch.empty((), dtype=torch.int64).random_()).reshape(1)]
        return np.concatenate([x.astype(np.float64) for x in r])
    @case('normal_overloads')
    def _():
        torch.manual_seed(4); m = torch.randn(3, 4); s = torch.rand(3, 4) + 0.5
        r = [torch.normal(m, s), torch.normal(m, 2.0), torch.normal(0.5, s), torch.normal(1.0, 3.0, size=(20,)), torch.normal(m, s[0])]
        return np.concatenate([arr(x).ravel() for x in r])
    @case('multinomial')
    def _():
        torch.manual_seed(5); w = torch.rand(3, 8)
        r = [torch.multinomial(w, 5, replacement=True), torch.multinomial(w, 4), torch.multinomial(w, 1), torch.multinomial(w[0], 6, True),
             torch.multinomial(w.double(), 3), torch.multinomial(w, 1, True)]
        return np.concatenate([arr(x).ravel() for x in r])
    @case('init')
    def _():
        torch.manual_seed(6); I = torch.nn.init; r = []
        for f in (lambda t: I.uniform_(t, -0.2, 0.3), lambda t: I.normal_(t, 0.1, 0.4), I.kaiming_uniform_, I.kaiming_normal_,
                  I.xavier_uniform_, I.xavier_normal_, lambda t: I.trunc_normal_(t, std=0.5)):
            t = torch.empty(5, 6); f(t); r.append(arr(t).ravel())
        return np.concatenate(r)
    @case('modules')
    def _():
        torch.manual_seed(7); nn = torch.nn
        ms = [nn.Linear(4, 3, bias=False), nn.Conv1d(2, 3, 3), nn.ConvTranspose2d(2, 3, 2), nn.RNN(3, 4), nn.LSTM(3, 2, num_layers=2), nn.GRU(2, 3),
              nn.Embedding(5, 2, padding_idx=1), nn.MultiheadAttention(4, 2), nn.LayerNorm(3), nn.BatchNorm1d(2)]
        return np.concatenate([arr(p).ravel() for m in ms for p in m.parameters()])
    @case('data')
    def _():
        U = torch.utils.data; DataLoader, TensorDataset, random_split, RandomSampler = U.DataLoader, U.TensorDataset, U.random_split, U.RandomSampler
        torch.manual_seed(8); ds = TensorDataset(torch.arange(10.0))
        a = [b[0] for b in DataLoader(ds, batch_size=3, shuffle=True)]
        b = [b[0] for b in DataLoader(ds, batch_size=4, shuffle=True)]
        g = torch.Generator().manual_seed(42); parts = random_split(range(10), [0.3, 0.7], generator=g)
        s = list(RandomSampler(range(7))); s2 = list(RandomSampler(range(7), replacement=True, num_samples=5))
        return np.concatenate([arr(x).ravel() for x in a + b] + [np.array(list(parts[0]) + list(parts[1]) + s + s2, np.float32)])
    @case('loader_draws')
    def _():
        U = torch.utils.data
        torch.manual_seed(12); ds = U.TensorDataset(torch.arange(6.0))
        a = [b[0] for b in U.DataLoader(ds, batch_size=4)]          # an iterator draws its base seed
        w = list(U.WeightedRandomSampler([0.1, 0.5, 0.2, 0.2], 6)) + list(U.WeightedRandomSampler([1., 2, 3], 2, False))
        return np.concatenate([arr(x) for x in a] + [np.array(w, np.float32), arr(torch.rand(3))])
    @case('fork')
    def _():
        torch.manual_seed(9)
        with torch.random.fork_rng():
            a = arr(torch.rand(3))
        return np.concatenate([a, arr(torch.rand(3))])
    @case('genstate')
    def _():
        g = torch.Generator(); g.manual_seed(3); torch.randn(5, generator=g); s = g.get_state()
        x = arr(torch.randn(3, generator=g)); g2 = torch.Generator(); g2.set_state(s); y = arr(torch.randn(3, generator=g2))
        torch.manual_seed(0); torch.set_rng_state(s); z = arr(torch.randn(3))
        return np.concatenate([x, y, z, s.numpy().astype(np.float32), np.array([g.initial_seed()], np.float32)])
    return C


def digest(a):
    a = np.ascontiguousarray(a)
    a = a.astype(np.int64) if a.dtype.kind in "iub" else a.astype(np.float64)
    return hashlib.sha256(a.tobytes()).hexdigest()[:24], [float(v) for v in a.ravel()[:4]]


def _torch_refs():
    import torch
    for name, f in cases(torch).items():
        print(f"    {name!r}: {digest(np.asarray(f()))!r},")


# printed by `/work/venv-torch/bin/python tests/test_random_torch.py` (PyTorch 2.13)
REF = {
    'randn1': ('0f0ed121c2e9175969efa2f1', [0.6613521575927734]),
    'rand1': ('28e3a28aa30527a22c0636b1', [0.7576315999031067]),
    'randn3': ('fb2d5df46282f50777993725', [0.8032760620117188, 0.17483338713645935, 0.08897809684276581]),
    'rand3': ('e735ad099a211df35d594d0e', [0.004263520240783691, 0.10556936264038086, 0.2858424782752991]),
    'randn15': ('b8c49ec3aadcac623f0dc7e9', [-0.7056439518928528, 0.6741186380386353, -0.5453586578369141, 0.9107227325439453]),
    'rand15': ('921339ca416e376cddcf1e53', [0.2973294258117676, 0.27659541368484497, 0.797356367111206, 0.3868792653083801]),
    'randn16': ('dde1938e8a9ca6910d77c439', [-0.339642196893692, -0.7702328562736511, 1.7878248691558838, -0.6213029623031616]),
    'rand16': ('4a5562b198d1531e2686d655', [0.16251617670059204, 0.6239765882492065, 0.9298167824745178, 0.2558940052986145]),
    'randn17': ('9a39917e4368c0e105f2c874', [-1.0461914539337158, 0.11729242652654648, -1.1596639156341553, 0.6123930811882019]),
    'rand17': ('ba64b191e2619a323f7e656e', [0.43424123525619507, 0.5351095795631409, 0.8302087187767029, 0.1238635778427124]),
    'randn33': ('3ee5b24434a86b05b30efd6a', [0.6013742089271545, 0.10874134302139282, -0.4498751163482666, 0.7841469049453735]),
    'rand33': ('969fd13a6f7b5b9b1fe98584', [0.6185925006866455, 0.5587391257286072, 0.19370794296264648, 0.3359719514846802]),
    'randn1000': ('2146b41babfedec1f82a02b5', [-0.5305590033531189, -1.1299705505371094, -0.6733834743499756, -0.7669191956520081]),
    'rand1000': ('493af5691e70af2c9a2b7d67', [0.3189346194267273, 0.6135610938072205, 0.44177669286727905, 0.2580375671386719]),
    'randn_float64_5': ('11bb1a1d342e13a6c9b83000', [0.6613521715704522, 0.2669240982925188, 0.061677258237348306, 0.6213173286854216]),
    'rand_float64_5': ('de043d16c90ffc65028529f2', [0.06105327471962363, 0.2245545065676504, 0.23425251394483937, 0.17709922744775553]),
    'unif_float64_5': ('06ea133971e4650613aaf016', [-0.45957746814486566, -0.08352463489440407, -0.06121921792686947, -0.1926717768701623]),
    'normal_float64_5': ('8ba84beca7557f74e626c9f9', [1.4242986916697689, 0.7537709670972819, 0.40485133900349213, 1.3562394587652167]),
    'randn_float64_40': ('ec42bc74816fd60406895c6f', [-0.31128955419003207, -0.7130302768401124, -0.729068152895376, -0.29920233004408114]),
    'rand_float64_40': ('88ae87c0410b8e50e6f12dc0', [0.06105327471962363, 0.2245545065676504, 0.23425251394483937, 0.17709922744775553]),
    'unif_float64_40': ('d8daab0a9759c37bbd230a05', [-0.45957746814486566, -0.08352463489440407, -0.06121921792686947, -0.1926717768701623]),
    'normal_float64_40': ('1d043753b57f57710783a94f', [-0.22919224212305453, -0.9121514706281911, -0.9394158599221392, -0.20864396107493793]),
    'randn_float16_5': ('68aebc8e4247136236c01bc4', [0.6611328125, 0.266845703125, 0.061676025390625, 0.62109375]),
    'rand_float16_5': ('e9a1e43a59900c26bb8b25be', [0.7578125, 0.279296875, 0.403076171875, 0.73486328125]),
    'unif_float16_5': ('0cf95f7ed3fb09b9cf043889', [1.142578125, 0.04241943359375, 0.3271484375, 1.08984375]),
    'normal_float16_5': ('72b781c7a8afb68ce353761e', [1.423828125, 0.75390625, 0.40478515625, 1.3564453125]),
    'randn_float16_40': ('55ebff320322a0e83f478030', [-1.525390625, -0.75, -0.65380859375, -1.609375]),
    'rand_float16_40': ('07acee41d5e73228eea36bde', [0.7578125, 0.279296875, 0.403076171875, 0.73486328125]),
    'unif_float16_40': ('141105cd339efbf2271bbadc', [1.142578125, 0.04241943359375, 0.3271484375, 1.08984375]),
    'normal_float16_40': ('d30ce5e40a9c8603a258132e', [-2.29296875, -0.9755859375, -0.8115234375, -2.435546875]),
    'randn_bfloat16_5': ('493a2a8088b90fed8d8f6d15', [0.66015625, 0.267578125, 0.061767578125, 0.62109375]),
    'rand_bfloat16_5': ('68d557a5570461492f40f54f', [0.7578125, 0.279296875, 0.40234375, 0.734375]),
    'unif_bfloat16_5': ('364cbe18135c1bdec3154af7', [1.140625, 0.04248046875, 0.326171875, 1.0859375]),
    'normal_bfloat16_5': ('205e2bac67960fb5c85ea48c', [1.421875, 0.75390625, 0.404296875, 1.359375]),
    'randn_bfloat16_40': ('1cc405adbbab01fda9bf94b1', [-1.5234375, -0.75, -0.65234375, -1.609375]),
    'rand_bfloat16_40': ('a4af48589b7f69cfa9275e79', [0.7578125, 0.279296875, 0.40234375, 0.734375]),
    'unif_bfloat16_40': ('d6261dc6ad28c6a933636b85', [1.140625, 0.04248046875, 0.326171875, 1.0859375]),
    'normal_bfloat16_40': ('8855db08d411ca7d6a88de52', [-2.296875, -0.9765625, -0.8125, -2.4375]),
    'seq': ('e744122173e3f27c93408cb0', [1.5409960746765137, -0.293428897857666, -2.1787893772125244, 0.5684312582015991]),
    'randn_2d_T': ('ef7b154b04f38be3f267f6c7', [0.39229682087898254, 0.5731067657470703, -1.3264806270599365, 0.024509044364094734]),
    'unif_2d_T': ('110aa5e2e73b151d8efccb63', [1.0734753608703613, 0.21266329288482666, -0.04974585771560669, -0.4610861539840698]),
    'randint': ('301921f1e88dd86ab73c423f', [6.0, 8.0, 7.0, 7.0]),
    'randint_f': ('63acb4ef6e9df61cfe0c8b90', [86.0, 48.0, 37.0, 67.0]),
    'randperm': ('92de4a061304d2cdb1b68c59', [0.0, 4.0, 9.0, 6.0]),
    'like': ('6cbde6e29ee5a376a948678d', [0.8302518725395203, 0.12611091136932373, 0.9074696898460388, 0.8199270367622375]),
    'linear': ('0e6d24f170c075eff91ba733', [-0.004322517663240433, 0.3097158372402191, -0.4751853346824646, -0.4248946011066437]),
    'state': ('349e72bbdbf555ee9df93e6f', [-1.1143440008163452, 1.6907901763916016, -0.8948279023170471, -0.3556250333786011]),
    'gen': ('51bd9d73eb336e4f2cc02698', [0.14904171228408813, 0.4865531325340271, 0.985661506652832, 0.16840142011642456]),
    'dropout': ('c43a89c6a200407123475110', [-1.6083426475524902, -0.0, -0.35796940326690674, -0.6198269128799438]),
    'dropout_grad': ('51e35e2e5fff917df1454d79', [1.4285714626312256, 0.0, 1.4285714626312256, 1.4285714626312256]),
    'bernoulli': ('3d6bbf449fde3bd808af3326', [1.0, 0.0, 0.0, 0.0]),
    'dists': ('216186715bd9bad8a96d11ef', [1.6637951135635376, 0.06795922666788101, 0.8223848938941956, 0.5180649757385254]),
    'random_': ('324c0d03fe840b0b471bbf73', [9.370559418075071e+17, 3.839649608876091e+18, 5.366245355481425e+18, 1.9973398621207837e+17]),
    'normal_overloads': ('31f70daef1a5d76c1c499649', [-2.552274227142334, 0.5077475309371948, 2.441270112991333, 2.2086434364318848]),
    'multinomial': ('a4c37026fb655a3cba83459d', [5.0, 2.0, 0.0, 2.0]),
    'init': ('005ead4c351381cc8b1f3db0', [0.08609877526760101, 0.07693774998188019, 0.2934149503707886, 0.1040147989988327]),
    'modules': ('1792fb56795a60116a8d1f7c', [0.03492254018783569, -0.301196813583374, 0.15921169519424438, 0.15689027309417725]),
    'data': ('06667b1bb6d15bca95f43fa6', [0.0, 1.0, 6.0, 3.0]),
    'loader_draws': ('89d9be954a63ee24aeed3eef', [0.0, 1.0, 2.0, 3.0]),
    'fork': ('3ae41e78b9a040739d88a176', [0.6557844877243042, 0.30202269554138184, 0.4798964262008667, 0.6557844877243042]),
    'genstate': ('ad4fb1202bec67c47328b041', [-1.3682591915130615, 0.3374950885772705, 1.0111159086227417, -1.3682591915130615]),
}


if __name__ == "__main__":
    _torch_refs()
else:
    import tgrad

    TGRAD = cases(tgrad)

    @pytest.mark.parametrize("name", sorted(REF))
    def test_same_numbers_as_pytorch(name):
        got = digest(np.asarray(TGRAD[name]()))
        assert got == REF[name], f"{name}: tgrad {got[1]}, PyTorch {REF[name][1]}"
