"""Makes tests/data/topk_ties.json: PyTorch 2.13 cpu sort / topk / kthvalue / mode indices on rows full of ties
(ATen's libstdc++ sort / nth_element / partial_sort and quick select order).  python topk_ties.py > topk_ties.json"""
import json

import torch

x = ((torch.arange(6 * 40) * 7 + 3) % 5).float().reshape(6, 40)
x[2, 5] = x[2, 17] = float("nan")
x[3, 11] = float("nan")
wide = ((torch.arange(2 * 130) * 11) % 4).reshape(2, 130)          # int64, the partial_sort path (k * 64 <= n)
out = {
    "top5": x.topk(5).indices.tolist(),
    "bottom3_unsorted": x.topk(3, largest=False, sorted=False).indices.tolist(),
    "top7_dim0": x.topk(4, dim=0).indices.tolist(),
    "wide_top2": wide.topk(2).indices.tolist(),
    "kth": [x.kthvalue(k).indices.tolist() for k in (1, 9, 20, 40)],
    "kth_dim0": x.kthvalue(3, dim=0).indices.tolist(),
    "sort": x.sort(1).indices.tolist(),
    "sort_desc_dim0": x.sort(0, descending=True).indices.tolist(),
    "argsort_wide": wide.argsort(1).tolist(),
    "mode": [x.mode(1).values.tolist(), x.mode(1).indices.tolist()],
    "mode_dim0": x.mode(0).indices.tolist(),
}
print(json.dumps(out))
