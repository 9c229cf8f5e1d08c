import torch

torch.manual_seed(24)
src = torch.tensor([1., 5., 2., 8., 3., 7.])
index = torch.tensor([0, 1, 0, 1, 2, 1])
for red in ('sum', 'prod', 'mean', 'amax', 'amin'):
    out = torch.zeros(3).scatter_reduce(0, index, src, reduce=red, include_self=False)
    out2 = torch.ones(3).scatter_reduce(0, index, src, reduce=red, include_self=True)
    print(red, out, out2)
print(torch.zeros(4).index_add(0, torch.tensor([0, 2, 2]), torch.tensor([1., 2., 3.]), alpha=2))
print(torch.zeros(2, 3).scatter_add_(1, torch.tensor([[0, 1, 1], [2, 2, 0]]), torch.ones(2, 3)))
print(torch.zeros(3, 4).scatter_(1, torch.tensor([[1], [3], [0]]), 5.0))
print(torch.zeros(3, 4).scatter(1, torch.tensor([[1, 2], [3, 3], [0, 0]]), torch.tensor([[1., 2.], [3., 4.], [5., 6.]]), reduce='add'))
# segment sum via index_add over edges (GNN message passing) and counts via bincount
edge_index = torch.tensor([[0, 1, 1, 2, 3, 3], [1, 0, 2, 1, 0, 2]])
x = torch.randn(4, 3, requires_grad=True)
msg = x[edge_index[0]] * 0.5
agg = torch.zeros(4, 3).index_add(0, edge_index[1], msg)
deg = torch.bincount(edge_index[1], minlength=4).clamp(min=1).unsqueeze(1)
mean_agg = agg / deg
mx = torch.zeros(4, 3).scatter_reduce(0, edge_index[1].unsqueeze(1).expand(-1, 3), msg, 'amax', include_self=False)
print(mean_agg)
print(mx)
(mean_agg.sum() + mx.sum()).backward()
print(x.grad)
# segment_reduce via lengths and cumsum offsets
vals = torch.arange(1., 8.)
lengths = torch.tensor([2, 0, 3, 2])
offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
seg = torch.repeat_interleave(torch.arange(4), lengths)
print(seg, offsets)
print(torch.zeros(4).index_add_(0, seg, vals))
print(torch.segment_reduce(vals, 'sum', lengths=lengths), torch.segment_reduce(vals, 'max', lengths=lengths, unsafe=True))
print(torch.segment_reduce(vals, 'mean', lengths=lengths, initial=0.0))
print(torch.zeros(4).index_reduce_(0, seg, vals, 'prod', include_self=False))
print(torch.zeros(2, 3).masked_scatter_(torch.tensor([[True, False, True], [False, True, True]]), torch.arange(1., 7.)))
print(torch.take_along_dim(torch.tensor([[10, 30, 20], [60, 40, 50]]), torch.tensor([[0, 2], [1, 0]]), dim=1))
print(torch.sparse_coo_tensor(edge_index, torch.ones(6), (4, 4)).to_dense().sum(0))
print(torch.unique(seg, sorted=True, return_inverse=True, return_counts=True))
