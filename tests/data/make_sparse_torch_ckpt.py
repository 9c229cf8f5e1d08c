"""A PyTorch 2.13 checkpoint holding sparse tensors, for tests/sparse/test_sparse_save.py: run with a PyTorch venv
(``/work/venv-torch/bin/python tests/data/make_sparse_torch_ckpt.py``); writes sparse_torch.pt (torch.save's zip
format) next to this file.  The test rebuilds the same tensors from ``contents()`` (plain lists)."""
import os


def contents():
    """name -> (layout, data lists, size): what the state dict holds."""
    return {
        "coo": ("coo", ([[0, 2, 2], [1, 0, 0]], [1., 2., 3.]), (3, 3)),              # uncoalesced (a duplicate)
        "hybrid": ("coo", ([[1, 0]], [[1., 2.], [3., 4.]]), (3, 2)),                  # a dense dimension
        "csr": ("csr", ([0, 1, 1, 3], [1, 0, 2], [1.5, -2., 3.]), (3, 3)),            # float64 values
    }


def main():
    import collections
    import torch
    sd = collections.OrderedDict()
    for name, (kind, data, size) in contents().items():
        if kind == "coo":
            sd[name] = torch.sparse_coo_tensor(torch.tensor(data[0]), torch.tensor(data[1]), size)
        else:
            sd[name] = torch.sparse_csr_tensor(torch.tensor(data[0]), torch.tensor(data[1]),
                                               torch.tensor(data[2], dtype=torch.float64), size)
    sd["coalesced"] = sd["coo"].coalesce()
    sd["dense"] = torch.arange(4, dtype=torch.int32).view(2, 2)[:, 1]                 # a strided view
    torch.save(sd, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sparse_torch.pt"))


if __name__ == "__main__":
    main()
