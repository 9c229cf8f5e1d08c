"""Variable-length batches for recurrent layers: ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pad_sequence``, ``pack_sequence``, ``unpad_sequence``, ``unpack_sequence``
(PyTorch's layouts and messages).

A PackedSequence holds the time-major rows of the sequences still running at each step:
``data`` (sum(lengths), *), ``batch_sizes[t]`` = how many sequences have a step t (a cpu int64
tensor), the batch sorted by decreasing length (``sorted_indices``, ``unsorted_indices``).
"""
from collections import namedtuple

import numpy as np

from ... import _creation as creation
from ..._functional import cat, stack
from ...tensor import Tensor


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = [None if t is None else t.to(data.device) for t in (self.sorted_indices, self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, *idx)

    def cpu(self):
        return self.to("cpu")

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _invert(perm):
    inv = np.empty(perm.numel(), np.int64)
    inv[perm.cpu().numpy()] = np.arange(perm.numel())
    return creation.tensor(inv, device=perm.device)


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        return lengths.cpu().numpy().astype(np.int64).reshape(-1)
    return np.asarray(lengths, np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (``batch_first``: (B, T, *)) of sequences of the given lengths."""
    lens = _lengths(lengths)
    if enforce_sorted:
        if (np.diff(lens) > 0).any():
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = creation.tensor(order, device=input.device)
        lens = lens[order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    if lens.size and lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to {lens[0]}, but got "
                           f"{input.shape[0]}")
    sizes = [int((lens > t).sum()) for t in range(int(lens[0]) if lens.size else 0)]
    data = cat([input[t, :b] for t, b in enumerate(sizes)], 0)
    return PackedSequence(data, creation.tensor(sizes, dtype=None, device="cpu"), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded (T, B, *) or (B, T, *) tensor, lengths) of a PackedSequence, in the original batch order."""
    sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    T = len(sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
        T = total_length
    B = sizes[0] if sizes else 0
    rows = list(sequence.data.split(sizes, 0))
    feat = tuple(sequence.data.shape[1:])
    for t, b in enumerate(sizes):
        if b < B:
            rows[t] = cat([rows[t], creation.full((B - b,) + feat, padding_value, dtype=sequence.data.dtype,
                                                  device=sequence.data.device)], 0)
    for _ in range(T - len(sizes)):
        rows.append(creation.full((B,) + feat, padding_value, dtype=sequence.data.dtype, device=sequence.data.device))
    padded = stack(rows, 0)
    lens = np.array([sum(1 for b in sizes if b > i) for i in range(B)], np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lens = lens[sequence.unsorted_indices.cpu().numpy()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, creation.tensor(lens)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (``batch_first``: (B, max L, *)), padded."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    L = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        n = L - s.shape[0]
        if n:
            pad = creation.full((n,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        out.append(s)
    return stack(out, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of ``pad_sequence``: (max L, B, *) (``batch_first``: (B, max L, *)) -> B tensors (L_i, *)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]


def unpack_sequence(packed_sequences):
    """The inverse of ``pack_sequence``: a PackedSequence -> its sequences (L_i, *) in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
