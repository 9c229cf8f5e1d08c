"""Prints the float32 bits (as int32) of kl_div / xlogy that tests/test_programs_surface7.py stores (run with PyTorch)."""
import torch, torch.nn.functional as F
torch.manual_seed(0)
a = torch.randn(4, 3) * 3; b = torch.randn(4, 3) * 3
lp = F.log_softmax(a / 4, 1).detach(); p = F.softmax(b / 4, 1); lq = F.log_softmax(b / 4, 1)
def bits(t): return t.detach().numpy().view("int32").flatten().tolist()
print('lp', bits(lp)); print('p', bits(p)); print('lq', bits(lq))
for lt, tgt in ((False, p), (True, lq)):
    x = lp.clone().requires_grad_()
    out = F.kl_div(x, tgt, reduction='none', log_target=lt)
    bm = F.kl_div(x, tgt, reduction='batchmean', log_target=lt)
    bm.backward()
    print(lt, 'none', bits(out)); print(lt, 'bm', bits(bm)); print(lt, 'grad', bits(x.grad))
print('xlogy', bits(torch.xlogy(p, p)), bits(torch.special.xlogy(lp.exp(), p * 3)))
