"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells, with PyTorch's arguments,
parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``, ``weight_hr_l0`` ...), gate order
(LSTM i, f, g, o; GRU r, z, n) and init (all U(-1/sqrt(hidden), 1/sqrt(hidden))), so state_dicts
interchange with PyTorch.

A layer runs one input projection ``x W_ih^T + b_ih`` for the whole sequence, then the recurrence:
a layer-direction is one ``lstm_layer`` / ``gru_layer`` / ``rnn_layer`` op (one launch for all time steps,
one for its backward); with projections (LSTM proj_size) or a PackedSequence, per step one
``h W_hh^T + b_hh`` (linear op) and one fused cell op (``lstm_cell`` / ``gru_cell``; RNN: add + tanh or
relu).  A PackedSequence input runs each step on the sequences still running.
"""
import math
import numbers
import warnings

from ... import _creation as creation
from ..._functional import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _step(mode, gi, h, c, w_hh, b_hh, w_hr):
    """One step from the input projection gi (B, G*H) and state h (and c): the new (h, c)."""
    hg = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        h, c = F._op("lstm_cell", gi, hg, c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        return F._op("gru_cell", gi, hg, h), None
    a = gi + hg
    return (a.tanh() if mode == "RNN_TANH" else a.relu()), None


def _layer(mode, x, tdim, h, c, weights, reverse, sizes=None):
    """One direction of one layer over x (time on dim ``tdim``): (outputs stacked on tdim, h_n, c_n).

    ``sizes``: x is a PackedSequence's data and sizes its batch_sizes (sequences sorted by length):
    step t runs the first sizes[t] rows; a row's state is final at its sequence's last step.
    """
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    gi = F.linear(x, w_ih, b_ih)
    if sizes is None and w_hr is None:
        kw = {"batch_first": tdim == 1, "reverse": reverse}
        if mode == "LSTM":
            y, h, c, _, _ = F._op("lstm_layer", gi, w_hh, b_hh, h, c, **kw)
            return y, h, c
        if mode == "GRU":
            y, h, _ = F._op("gru_layer", gi, w_hh, b_hh, h, **kw)
            return y, h, None
        y, h = F._op("rnn_layer", gi, w_hh, b_hh, h, nonlinearity="tanh" if mode == "RNN_TANH" else "relu", **kw)
        return y, h, None
    if sizes is None:
        steps = gi.unbind(tdim)
        outs = [None] * len(steps)
        for t in (reversed(range(len(steps))) if reverse else range(len(steps))):
            h, c = _step(mode, steps[t], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        return stack(outs, tdim), h, c
    steps = gi.split(sizes, 0)
    outs = [None] * len(sizes)
    if reverse:         # the running batch grows: rows join with their initial state
        h0, c0 = h, c
        h, c = h0[:sizes[-1]], (None if c0 is None else c0[:sizes[-1]])
        for t in reversed(range(len(sizes))):
            n, b = h.shape[0], sizes[t]
            if n < b:
                h = cat([h, h0[n:b]], 0)
                c = None if c is None else cat([c, c0[n:b]], 0)
            h, c = _step(mode, steps[t], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        return cat(outs, 0), h, c
    done_h, done_c = [], []     # the running batch shrinks: the rows that stop keep their last state
    for t, b in enumerate(sizes):
        if h.shape[0] > b:
            done_h.append(h[b:])
            h = h[:b]
            if c is not None:
                done_c.append(c[b:])
                c = c[:b]
        h, c = _step(mode, steps[t], h, c, w_hh, b_hh, w_hr)
        outs[t] = h
    h_n = cat([h] + done_h[::-1], 0) if done_h else h
    c_n = cat([c] + done_c[::-1], 0) if done_c else c
    return cat(outs, 0), h_n, c_n


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU (``mode`` 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU')."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout) if isinstance(dropout, numbers.Number) else dropout
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        for name, v in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(v).__name__}")
        for name, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(v, int):
                raise TypeError(f"{name} should be of type int, got: {type(v).__name__}")
            if v <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [("weight_ih_l{}{}", (gate_size, layer_input)), ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    params += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in params:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(creation.empty(shape, **kw)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op (cuDNN's weight packing; tgrad reads the parameters as they are)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---------------------------------------------------------------- checks (PyTorch's messages)
    def check_input(self, input, batch_sizes=None):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes=None):
        mini_batch = _mini_batch(self, input, batch_sizes)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch,
                self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx if permutation is None else hx.index_select(1, permutation)

    # ---------------------------------------------------------------- the recurrence
    def _batched(self, input, name):
        """(3-D input, is_batched, batch_dim) with PyTorch's check of the input's dims."""
        if input.dim() not in (2, 3):
            tail = "tensor instead" if name == "RNN" else "instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {tail}")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        return input, batched, batch_dim

    def _zeros(self, input, size, batch_sizes=None):
        mini_batch = _mini_batch(self, input, batch_sizes)
        return creation.zeros(self.num_layers * (2 if self.bidirectional else 1), mini_batch, size,
                              dtype=input.dtype, device=input.device)

    def _run(self, input, h0, c0, sizes=None):
        """The stacked, possibly bidirectional recurrence: (output, h_n, c_n or None)."""
        tdim = 1 if self.batch_first else 0
        D = 2 if self.bidirectional else 1
        weights = self.all_weights
        hs, cs = [], []
        x = input
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                w = list(weights[k])
                w_ih, w_hh = w[0], w[1]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                w_hr = w[-1] if self.proj_size > 0 else None
                out, h, c = _layer(self.mode, x, tdim, h0[k], None if c0 is None else c0[k],
                                   (w_ih, w_hh, b_ih, b_hh, w_hr), d == 1, sizes)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if D == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                if tdim == 1 and sizes is None:     # PyTorch draws the mask for the time-major (seq, batch, H)
                    # output (a packed batch's data is time-major whatever batch_first says)
                    x = F.dropout(x.transpose(0, 1).contiguous(), self.dropout, True).transpose(0, 1)
                else:
                    x = F.dropout(x, self.dropout, True)
        return x, stack(hs, 0), (stack(cs, 0) if c0 is not None else None)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return _single_state(self, "RNN", input, hx)


class GRU(RNNBase):
    """GRU: r, z = sigmoid(.), n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) n + z h."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return _single_state(self, "GRU", input, hx)


def _mini_batch(self, input, batch_sizes):
    if batch_sizes is not None:
        return int(batch_sizes[0])
    return input.size(0) if self.batch_first else input.size(1)


def _single_state(self, name, input, hx):
    if isinstance(input, PackedSequence):
        data, batch_sizes, sorted_idx, unsorted_idx = input
        hx = self._zeros(data, self.hidden_size, batch_sizes) if hx is None else self.permute_hidden(hx, sorted_idx)
        self.check_forward_args(data, hx, batch_sizes)
        output, h_n, _ = self._run(data, hx, None, [int(b) for b in batch_sizes.tolist()])
        return (PackedSequence(output, batch_sizes, sorted_idx, unsorted_idx),
                self.permute_hidden(h_n, unsorted_idx))
    input, batched, batch_dim = self._batched(input, name)
    if not batched and hx is not None:
        if hx.dim() != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
        hx = hx.unsqueeze(1)
    elif batched and hx is not None and hx.dim() != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
    if hx is None:
        hx = self._zeros(input, self.hidden_size)
    self.check_forward_args(input, hx)
    output, h_n, _ = self._run(input, hx, None)
    if not batched:
        output, h_n = output.squeeze(batch_dim), h_n.squeeze(1)
    return output, h_n


class LSTM(RNNBase):
    """LSTM (gates i, f, g, o): c' = f c + i g, h' = o tanh(c') (projected by W_hr when proj_size > 0)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes=None):
        mini_batch = _mini_batch(self, input, batch_sizes)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_idx, unsorted_idx = input
            real = self.proj_size if self.proj_size > 0 else self.hidden_size
            if hx is None:
                hx = (self._zeros(data, real, batch_sizes), self._zeros(data, self.hidden_size, batch_sizes))
            else:
                hx = (self.permute_hidden(hx[0], sorted_idx), self.permute_hidden(hx[1], sorted_idx))
            self.check_forward_args(data, hx, batch_sizes)
            output, h_n, c_n = self._run(data, hx[0], hx[1], [int(b) for b in batch_sizes.tolist()])
            return (PackedSequence(output, batch_sizes, sorted_idx, unsorted_idx),
                    (self.permute_hidden(h_n, unsorted_idx), self.permute_hidden(c_n, unsorted_idx)))
        input, batched, batch_dim = self._batched(input, "LSTM")
        if hx is None:
            hx = (self._zeros(input, self.proj_size if self.proj_size > 0 else self.hidden_size),
                  self._zeros(input, self.hidden_size))
        elif batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        output, h_n, c_n = self._run(input, hx[0], hx[1])
        if not batched:
            output, h_n, c_n = output.squeeze(batch_dim), h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# ------------------------------------------------------------------ cells
class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(creation.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(creation.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name, input):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        return input, batched

    def _zero_state(self, input):
        return creation.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)

    def _gates(self, input):
        return F.linear(input, self.weight_ih, self.bias_ih)


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, batched = self._prepare("RNNCell", input)
        hx = self._zero_state(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h, _ = _step(mode, self._gates(input), hx, None, self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """(h', c') from one fused lstm_cell op on x W_ih^T + b_ih and h W_hh^T + b_hh."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        input, batched = self._prepare("LSTMCell", input)
        if hx is None:
            z = self._zero_state(input)
            hx = (z, z)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _step("LSTM", self._gates(input), hx[0], hx[1], self.weight_hh, self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """h' from one fused gru_cell op on x W_ih^T + b_ih and h W_hh^T + b_hh."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        input, batched = self._prepare("GRUCell", input)
        hx = self._zero_state(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        h, _ = _step("GRU", self._gates(input), hx, None, self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)
