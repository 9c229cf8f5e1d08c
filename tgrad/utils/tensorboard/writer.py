"""``SummaryWriter``: PyTorch's TensorBoard writer over the ``tensorboard`` package's ``EventFileWriter`` (one
event file per run directory, written by its own thread, flushed every ``flush_secs`` or ``max_queue`` events)."""
import io
import math
import os
import socket
import time
from datetime import datetime

import numpy as np
from google.protobuf import text_format
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ...tensor import Tensor
from . import summary as S

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes Event protocol buffers to an event file in ``log_dir`` (asynchronously)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        graph, stepstats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)
        trm = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=stepstats.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=trm), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


class SummaryWriter:
    """Writes scalars, histograms, images, text, audio, PR curves, hyper-parameters, embeddings and a model's graph
    to ``log_dir`` (default ``runs/<Mon>DD_HH-MM-SS_<host><comment>``) for TensorBoard."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname()
                                   + comment)
        self.log_dir, self.purge_step = log_dir, purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        # TensorFlow's default histogram buckets: ±1e-12 * 1.1^k up to 1e20, and 0
        v, buckets = 1e-12, []
        while v < 1e20:
            buckets.append(v)
            v *= 1.1
        self.default_bins = [-b for b in buckets[::-1]] + [0] + buckets

    def _get_file_writer(self):
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:     # TensorBoard drops the events at or after this step
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in (exp, ssi, sei):
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._get_file_writer().add_summary(S.scalar(tag, scalar_value, new_style=new_style,
                                                     double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each scalar in a run directory of its own, ``<log_dir>/<main_tag>_<tag>``, under ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            key = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(key)
            if fw is None:
                fw = self.all_writers[key] = FileWriter(key, self.max_queue, self.flush_secs, self.filename_suffix)
            fw.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        self._get_file_writer().add_summary(S.tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                                            bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        self.add_image(tag, S.figure_to_image(figure, close), global_step, walltime,
                       dataformats="NCHW" if isinstance(figure, list) else "CHW")

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._get_file_writer().add_summary(S.audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The model's autograd graph for ``model(*input_to_model)``: inputs, parameters (by their module path)
        and one node per backward function, in the scope of the module whose output it made."""
        self._get_file_writer().add_graph(_graph(model, input_to_model, verbose))

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """The projector plugin's files in ``<log_dir>/<step:05d>/<tag>``: tensors.tsv, metadata.tsv, sprite.png,
        and ``projector_config.pbtxt`` listing every embedding added."""
        mat = S.make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{_encode(tag)}"
        logdir = self._get_file_writer().get_logdir()
        path = os.path.join(logdir, subdir)
        if os.path.exists(path):
            if not os.path.isdir(path):
                raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        if metadata is not None and mat.shape[0] != len(metadata):
            raise AssertionError("#labels should equal with #data points")
        if label_img is not None and mat.shape[0] != label_img.shape[0]:
            raise AssertionError("#images should equal with #data points")
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        if metadata_header and metadata is not None and len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        os.makedirs(path, exist_ok=True)
        info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}", tensor_path=f"{subdir}/tensors.tsv")
        if metadata is not None:
            rows = ([str(x) for x in metadata] if not metadata_header else
                    ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)])
            _write(os.path.join(path, "metadata.tsv"), ("\n".join(rows) + "\n").encode())
            info.metadata_path = f"{subdir}/metadata.tsv"
        if label_img is not None:
            _write(os.path.join(path, "sprite.png"), _sprite(label_img))
            info.sprite.image_path = f"{subdir}/sprite.png"
            info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
        _write(os.path.join(path, "tensors.tsv"),
               "".join("\t".join(str(v.item()) for v in row) + "\n" for row in mat).encode())
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([info])
        _write(os.path.join(logdir, "projector_config.pbtxt"),
               text_format.MessageToString(self._projector_config).encode())

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None):
        self._get_file_writer().add_summary(
            S.pr_curve(tag, S.make_np(labels), S.make_np(predictions), num_thresholds, weights), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
                         weights=None, walltime=None):
        self._get_file_writer().add_summary(
            S.pr_curve_raw(tag, true_positive_counts, false_positive_counts, true_negative_counts,
                           false_negative_counts, precision, recall, num_thresholds, weights), global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        self._get_file_writer().add_summary(S.custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._get_file_writer().add_summary(S.custom_scalars({category: {title: ["Margin", tags]}}))

    def add_custom_scalars(self, layout):
        self._get_file_writer().add_summary(S.custom_scalars(layout))

    def flush(self):
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self):
        if self.all_writers is None:
            return      # closed twice
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _encode(raw):
    return raw.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def _sprite(label_img):
    """The label images on a square grid, one PNG (floats in [0, 1])."""
    from PIL import Image
    chw = S.make_grid(S.make_np(label_img), ncols=math.ceil(label_img.shape[0] ** 0.5))
    square = np.zeros((chw.shape[2], chw.shape[2], 3))
    hwc = chw.transpose(1, 2, 0)
    square[:hwc.shape[0]] = hwc
    buf = io.BytesIO()
    Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(buf, format="PNG")
    return buf.getvalue()


def _graph(model, inputs, verbose):
    """(GraphDef, RunMetadata) of the autograd graph of ``model(*inputs)``."""
    inputs = () if inputs is None else inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    root = type(model).__name__
    scopes, hooks = {}, []
    for name, m in model.named_modules():
        scope = root + "".join(f"/{type(model.get_submodule('.'.join(name.split('.')[:i + 1]))).__name__}[{p}]"
                               for i, p in enumerate(name.split("."))) if name else root

        def hook(mod, args, out, scope=scope):
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, Tensor) and t.grad_fn is not None:
                    scopes.setdefault(t.grad_fn, scope)
        hooks.append(m.register_forward_hook(hook))
    try:
        out = model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    params = {id(p): n for n, p in model.named_parameters()}
    nodes, names = [], {}
    for i, t in enumerate(inputs):
        if isinstance(t, Tensor):
            names[id(t)] = f"input/input.{i + 1}"
            nodes.append(NodeDef(name=names[id(t)], op="IO Node", attr={"_output_shapes": _shape_attr(t)}))

    def visit(fn):
        """The node name of backward function ``fn`` (a leaf's AccumulateGrad: the parameter or input)."""
        if fn is None:
            return None
        if fn in names:
            return names[fn]
        var = getattr(fn, "variable", None)
        if var is not None:
            name = names.get(id(var)) or f"{root}/{params.get(id(var), 'tensor')}"
            if id(var) not in names:
                names[id(var)] = name
                nodes.append(NodeDef(name=name, op="prim::GetAttr", attr={"_output_shapes": _shape_attr(var)}))
            names[fn] = name
            return name
        ins = [n for n in (visit(f) for f, _ in fn.next_functions) if n is not None]
        op = type(fn).__name__
        for suffix in ("Backward0", "Backward1", "Backward"):
            op = op[:-len(suffix)] if op.endswith(suffix) else op
        names[fn] = f"{scopes.get(fn, root)}/{op}.{len(nodes)}"
        nodes.append(NodeDef(name=names[fn], op=f"aten::{op.lower()}", input=ins))
        return names[fn]
    for t in out if isinstance(out, (tuple, list)) else (out,):
        if isinstance(t, Tensor):
            src = visit(t.grad_fn) or names.get(id(t))
            nodes.append(NodeDef(name=f"output/output.{len(nodes)}", op="IO Node", input=[src] if src else [],
                                 attr={"_output_shapes": _shape_attr(t)}))
    if verbose:
        print("\n".join(f"{n.name} = {n.op}({', '.join(n.input)})" for n in nodes))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), RunMetadata()


def _shape_attr(t):
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in t.shape])
    return AttrValue(list=AttrValue.ListValue(shape=[shape]))
