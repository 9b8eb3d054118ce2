"""The worker side of vllm_plugin.refresh: vLLM's worker extension (worker_extension_cls, which the
plugin sets for load_format="weightloader") whose method each worker runs through collective_rpc.

A refresh compares the digests the newer checkpoint's header records with those of the checkpoint
the engine holds (remembered at load, model._wl_held), reads the tensors that changed and the
others of each layer they go into (layers.closure), and hands them to vLLM's own load_weights under
vLLM's layerwise reload, for those layers only: each is set back to the checkpoint's layout, filled,
processed again as at start-up and copied into the tensors the engine runs with. Nothing is changed
before the newer checkpoint is found to fit (same tensors, same shapes)."""
import time

from vllm.config import set_current_vllm_config
from vllm.model_executor.model_loader import get_model_loader
from vllm.model_executor.model_loader.reload import finalize_layerwise_reload, initialize_layerwise_reload

from ..errors import Error, _from_core
from ..loaders import Weights
from ..refresh import changed_tensors, recorded_digests
from .layers import closure
from .model_loader import _Feed, _rank_label, feed_model, logger


class WeightloaderWorkerExtension:
    """Methods vLLM adds to its worker class (worker_extension_cls)."""

    def weightloader_refresh(self, newer, since=None):
        """This worker's model brought up to `newer` (see vllm_plugin.refresh). Returns a report
        dict, or {"error": ...} for weightloader's error, which the caller raises (an exception
        from a worker process would reach it as vLLM's text only)."""
        try:
            with set_current_vllm_config(self.vllm_config):
                report = refresh_model(self.model_runner.get_model(), self.vllm_config, newer, since)
        except Error as e:
            logger.error("weightloader: %s", e)
            return {"error": {"class": type(e).__name__, "code": e.code, "message": str(e), "file": e.file,
                              "tensor": e.tensor}}
        for reset in ("reset_lora_state", "reset_encoder_cache", "reset_mm_cache"):  # as vLLM's reload_weights
            getattr(self.model_runner, reset)()
        return report


def refresh_model(model, vllm_config, newer, since=None):
    """vLLM's `model` (this worker's) brought up to `newer`; returns this worker's report as a dict."""
    held = getattr(model, "_wl_held", None)
    if held is None:
        raise _invalid(f"refresh: vLLM's {type(model).__name__} was not loaded by load_format='weightloader' from "
                       "a checkpoint weightloader reads tensor by tensor (a registry loader), so nothing says what "
                       "it holds")
    model_config = vllm_config.model_config
    model_loader = get_model_loader(vllm_config.load_config)
    loader = model_loader.make_loader(newer, model_config.dtype)
    weights = loader.get_weights(newer)
    if not isinstance(weights, Weights):
        raise _invalid(f"{newer}: refresh needs a registry loader (it reads the tensors that changed), not "
                       f"{type(loader).__name__}")
    _check_fits(weights, held, newer)
    old = held["digests"]
    if since is not None:
        old = recorded_digests(model_loader.make_loader(since, model_config.dtype).get_weights(since)._source)
    new = recorded_digests(weights._source)
    changed, unrecorded = changed_tensors(list(weights), new, old)
    layers, names = closure(held["layers"], changed)
    started = time.perf_counter()
    feed = _Feed(Weights(weights._source.only(names), weights._dtype), newer)
    if names:
        modules = dict(model.named_modules())
        try:
            _reload(model, [modules[n] for n in layers], feed, model_config)
        except BaseException:
            # the layers it rebuilt hold newer tensors, maybe not all: whatever they hold, read them next time
            held["digests"] = {n: d for n, d in held["digests"].items() if n not in names}
            raise
    held["digests"] = new
    seconds = time.perf_counter() - started
    logger.info("weightloader: refresh from %s%s: %d of %d tensors changed, %d read (%d vLLM layers rebuilt) in "
                "%.3f s, %.3f GiB", newer, _rank_label(), len(changed), len(weights), len(names), len(layers),
                seconds, (feed.mapped + feed.read) / 2**30)
    return {"changed": changed, "unchanged": len(weights) - len(changed), "unrecorded": unrecorded, "loaded": names,
            "layers": layers, "bytes_read": feed.mapped + feed.read, "seconds": seconds, "missing": [],
            "unexpected": []}


def _reload(model, layers, feed, model_config):
    """vLLM's layerwise reload of `layers` (reload.initialize_layerwise_reload: each put back in the
    checkpoint's layout, its weight loaders buffering until the layer is whole, then processed and
    copied into the tensors the engine runs with), fed by model.load_weights."""
    for layer in layers:
        initialize_layerwise_reload(layer)
    try:
        feed_model(model, feed)
    finally:
        for layer in layers:
            finalize_layerwise_reload(layer, model_config)


def _check_fits(weights, held, newer):
    """The newer checkpoint has the tensors the engine was loaded from, with their shapes: a
    refresh changes values, never the model."""
    shapes = held["shapes"]
    unknown = [n for n in weights if n not in shapes]
    absent = [n for n in shapes if n not in weights]
    if unknown or absent:
        names, what = (absent, "lacks") if absent else (unknown, "adds")
        raise _from_core("MissingTensors" if absent else "InvalidArgument",
                         f"refresh: the newer checkpoint {what} {len(names)} tensor(s) against the one the engine "
                         f"was loaded from ({', '.join(names[:8])}): a refresh changes values, not the model; start "
                         "a new engine", str(newer), names[0], False)
    for name in weights:
        shape = list(weights.info(name)["shape"])
        if shape != shapes[name]:
            file = weights.info(name).get("file") or newer
            raise _from_core("ShapeMismatch", f"refresh: shape {shape} in the newer checkpoint, {shapes[name]} in "
                             "the one the engine was loaded from: a refresh changes values, not shapes; start a "
                             "new engine", file, name, False)


def _invalid(message):
    return _from_core("InvalidArgument", message, "", "", False)
