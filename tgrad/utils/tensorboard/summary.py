"""The ``Summary`` protocol buffers of ``SummaryWriter``, built as ``torch.utils.tensorboard.summary`` builds them
(same tags, fields, plugin data, histogram buckets, image encoding), from numpy arrays of tgrad tensors."""
import io
import struct
import wave

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ... import dtypes as D
from ...tensor import Tensor


def make_np(x):
    """A numpy array of a tensor (detached, on the host; bfloat16 as float16), an array, or a Python number."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        if x.dtype is D.bfloat16:
            x = x.to(D.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def _half_val(a):     # PyTorch packs each value as a float32 and stores its bits as an int
    return [struct.unpack("i", struct.pack("f", v))[0] for v in a.reshape(-1).tolist()]


def _as_list(a):
    return a.reshape(-1).tolist()


_TENSOR_TYPE_MAP = {
    "float16": ("DT_HALF", "half_val", _half_val), "bfloat16": ("DT_BFLOAT16", "half_val", _half_val),
    "float32": ("DT_FLOAT", "float_val", _as_list), "float64": ("DT_DOUBLE", "double_val", _as_list),
    "int8": ("DT_INT8", "int_val", _as_list), "uint8": ("DT_UINT8", "uint32_val", _as_list),
    "int16": ("DT_INT16", "int_val", _as_list), "int32": ("DT_INT32", "int_val", _as_list),
    "int64": ("DT_INT64", "int64_val", _as_list), "bool": ("DT_BOOL", "bool_val", _as_list),
}


def _plugin(name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name, content=content))


def _shape(*dims):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in dims])


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """One scalar: ``simple_value``, or (``new_style``) a float/double TensorProto of the scalars plugin."""
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {tensor.size} "
                             f"and {tensor.ndim} dimensions.")
    value = float(tensor)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[value], dtype="DT_FLOAT"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=_plugin("scalars"))])


def tensor_proto(tag, tensor):
    """The whole tensor as a TensorProto (tensor plugin)."""
    if tensor.numel() * tensor.element_size() >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if tensor.dtype.name not in _TENSOR_TYPE_MAP:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, convert = _TENSOR_TYPE_MAP[tensor.dtype.name]
    values = tensor.detach().cpu()
    a = values.float().numpy() if tensor.dtype.name in ("float16", "bfloat16") else values.numpy()
    proto = TensorProto(dtype=dtype, tensor_shape=_shape(*tensor.shape), **{field: convert(a)})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin("tensor"), tensor=proto)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name, values, bins, max_bins=None):
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(make_np(values).astype(float), bins,
                                                                        max_bins))])


def make_histogram(values, bins, max_bins=None):
    """np.histogram of the values, at most ``max_bins`` buckets (neighbours merged), empty buckets at either end
    dropped but one (TensorFlow's histogram.cc)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins
        if len(counts) % sub:
            counts = np.pad(counts, pad_width=[[0, sub - len(counts) % sub]], mode="constant", constant_values=0)
        counts = counts.reshape(-1, sub).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1], new_limits[-1] = limits[:-1:sub], limits[-1]
        limits = new_limits
    cum = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def make_grid(images, ncols=8):
    """(N, 3|1, H, W) -> one (3, H rows, W cols) canvas, up to ``ncols`` images a row."""
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(float(n) / ncols))
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
    return canvas


def convert_to_HWC(tensor, input_format):
    """An image array in ``input_format`` (NCHW, CHW, HWC, HW, ... in any order) as one HWC image."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: {tensor.shape}, "
                             f"input_format: {input_format}")
    fmt = input_format.upper()
    if len(fmt) == 4:
        return make_grid(tensor.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = tensor.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc, hwc, hwc], 2) if hwc.shape[2] == 1 else hwc
    if len(fmt) == 2:
        hw = tensor.transpose([fmt.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    return None


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """A PNG image: floats in [0, 1] scaled by 255, uint8 as is, clipped to [0, 255]."""
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if tensor.dtype == np.uint8 else 255
    tensor = (tensor.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(tensor, rescale=rescale))])


def make_image(tensor, rescale=1):
    from PIL import Image
    height, width, channel = tensor.shape
    img = Image.fromarray(tensor).resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channel, encoded_image_string=out.getvalue())


def figure_to_image(figures, close=True):
    """A matplotlib figure (or a list of them) rendered to a CHW (NCHW) uint8 array."""
    import matplotlib.backends.backend_agg as agg
    import matplotlib.pyplot as plt

    def render(figure):
        canvas = agg.FigureCanvasAgg(figure)
        canvas.draw()
        w, h = figure.canvas.get_width_height()
        chw = np.moveaxis(np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape([h, w, 4])[:, :, :3], 2, 0)
        if close:
            plt.close(figure)
        return chw
    return np.stack([render(f) for f in figures]) if isinstance(figures, list) else render(figures)


def audio(tag, tensor, sample_rate=44100):
    """Mono 16-bit WAV of samples in [-1, 1] (clipped, with PyTorch's warning)."""
    a = make_np(tensor).squeeze()
    if abs(a).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        a = a.clip(-1, 1)
    if a.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    a = (a * np.iinfo(np.int16).max).astype("<i2")
    f = io.BytesIO()
    with wave.open(f, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(a.data)
    snd = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=a.shape[-1],
                        encoded_audio_string=f.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=snd)])


def custom_scalars(layout):
    """``{category: {chart title: ["Multiline", tags] | ["Margin", [value, lower, upper]]}}``."""
    categories = []
    for k, v in layout.items():
        charts = []
        for title, (kind, tags) in v.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = [layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])]
                charts.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=series)))
            else:
                charts.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=k, chart=charts))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin("custom_scalars"))])


def text(tag, text):
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")], tensor_shape=_shape(1))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", tensor=proto,
                                        metadata=_plugin("text", TextPluginData(version=0).SerializeToString()))])


def _pr_summary(tag, data, num_thresholds):
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=_shape(*data.shape))
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin("pr_curves", content), tensor=proto)])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    return _pr_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), min(num_thresholds, 127))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    num_thresholds = min(num_thresholds, 127)
    return _pr_summary(tag, compute_curve(labels, predictions, num_thresholds, weights), num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """(6, num_thresholds): true/false positives/negatives, precision, recall at thresholds i / (n - 1)."""
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    labels = labels.astype(np.float64)
    tp_b, _ = np.histogram(buckets, bins=num_thresholds, range=(0, num_thresholds - 1), weights=labels * weights)
    fp_b, _ = np.histogram(buckets, bins=num_thresholds, range=(0, num_thresholds - 1),
                           weights=(1.0 - labels) * weights)
    tp, fp = np.cumsum(tp_b[::-1])[::-1], np.cumsum(fp_b[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    return np.stack((tp, fp, tn, fn, tp / np.maximum(1e-7, tp + fp), tp / np.maximum(1e-7, tp + fn)))


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The hparams plugin's three summaries: the experiment, the session's start (values) and end."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION, PLUGIN_NAME,
                                                      SESSION_END_INFO_TAG, SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    discrete = hparam_domain_discrete or {}
    if not isinstance(discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    ssi, hps = SessionStartInfo(), []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            ssi.hparams[k].number_value = make_np(v)[0]
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
            continue
        # the order matters: a bool is an int (PyTorch logs True as the number 1)
        kind = ("number_value", "DATA_TYPE_FLOAT64") if isinstance(v, (int, float)) else \
            ("string_value", "DATA_TYPE_STRING") if isinstance(v, str) else \
            ("bool_value", "DATA_TYPE_BOOL") if isinstance(v, bool) else None
        if kind is None:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(ssi.hparams[k], kind[0], v)
        domain = (struct_pb2.ListValue(values=[struct_pb2.Value(**{kind[0]: d}) for d in discrete[k]])
                  if k in discrete else None)
        hps.append(HParamInfo(name=k, type=DataType.Value(kind[1]), domain_discrete=domain))

    def summary(tag, **content):
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content).SerializeToString()
        return Summary(value=[Summary.Value(tag=tag, metadata=_plugin(PLUGIN_NAME, data))])
    exp = Experiment(hparam_infos=hps, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (summary(EXPERIMENT_TAG, experiment=exp), summary(SESSION_START_INFO_TAG, session_start_info=ssi),
            summary(SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
