"""load_format="weightloader": vLLM's BaseModelLoader over WeightLoaderRegistry.

model_loader_extra_config (a dict, or JSON on `vllm serve --model-loader-extra-config`):
- "weight_loader": a registry name (hf, local, gguf, llama2c, meta, custom_binary, or one that a
  user registered), "package.module:Class" for a BaseWeightLoader subclass that vLLM's worker
  processes import themselves, or "auto" (the default: the loader the checkpoint's format asks for;
  a model id goes to hf);
- "weight_loader_kwargs": the loader's keyword arguments ("dtype" may be a name such as
  "bfloat16"). A registry loader reads in vLLM's dtype unless told otherwise.

The loader's get_weights(model) says what to read; vLLM's own model class puts each tensor in
place (its load_weights: fused qkv and gate_up, tied embeddings, tensor-parallel slices). A
checkpoint that does not fit the model fails with weightloader's error naming the file and tensor.
"""
import contextlib
import importlib
import time

import torch
from vllm.logger import init_logger
from vllm.model_executor.model_loader.base_loader import BaseModelLoader

from .. import _core, dtypes
from ..errors import Error, _from_core
from ..loaders import BaseWeightLoader, CoreWeightLoader, Weights, WeightLoaderRegistry, detect_name_scheme
from ..refresh import recorded_digests
from . import model_dir
from .layers import LayerRecorder

LOAD_FORMAT = "weightloader"
_EXTRA_KEYS = ("weight_loader", "weight_loader_kwargs")

logger = init_logger(__name__)


class WeightloaderModelLoader(BaseModelLoader):
    """vLLM's model loader for load_format="weightloader"."""

    def __init__(self, load_config):
        super().__init__(load_config)
        extra = dict(load_config.model_loader_extra_config or {})
        unknown = sorted(set(extra) - set(_EXTRA_KEYS))
        if unknown:
            raise _invalid(f"model_loader_extra_config: unknown key(s) {', '.join(unknown)}; "
                           f"load_format='{LOAD_FORMAT}' takes {', '.join(_EXTRA_KEYS)}")
        self.loader_name = extra.get("weight_loader") or "auto"
        self.loader_kwargs = dict(extra.get("weight_loader_kwargs") or {})
        if "dtype" in self.loader_kwargs and isinstance(self.loader_kwargs["dtype"], str):
            self.loader_kwargs["dtype"] = _torch_dtype(self.loader_kwargs["dtype"])
        self.verify = str(self.loader_kwargs.get("verify", "none")) != "none"

    @classmethod
    def for_extra_config(cls, extra):
        """The loader EngineArgs' model_loader_extra_config describes (before vLLM makes its own)."""
        from vllm.config.load import LoadConfig
        return cls(LoadConfig(load_format=LOAD_FORMAT, model_loader_extra_config=dict(extra or {})))

    def make_loader(self, source, model_dtype=None):
        """The BaseWeightLoader this load uses for `source` (a local path, a model id or a URL)."""
        name, kwargs = self.loader_name, dict(self.loader_kwargs)
        if ":" in name and not name.startswith(("/", ".")):
            cls = _import_class(name)
        else:
            if name == "auto":
                name, detected = detect(source)
                kwargs = {**detected, **kwargs}
            cls = WeightLoaderRegistry.get(name)
        if issubclass(cls, CoreWeightLoader) and model_dtype is not None:
            kwargs.setdefault("dtype", model_dtype)  # converted as it is read: vLLM's copy is then plain
        return cls(**kwargs)

    def vllm_model(self, source):
        """What vLLM is given as its model: `source` itself when it is a Hugging Face directory or
        model id, else a directory with the config.json it needs (model_dir.prepare)."""
        if model_dir.is_hf_model(source):
            return source
        return model_dir.prepare(source, self.make_loader(source), [self.loader_name, self.loader_kwargs])

    def download_model(self, model_config):
        """A model id: its files into the standard Hugging Face cache (the hf loader's download)."""
        source = model_source(model_config)
        self.make_loader(source).get_weights(source)

    def load_weights(self, model, model_config):
        try:
            self._load_weights(model, model_config)
        except Error as e:  # one line in vLLM's log that says it all, above vLLM's own report of the failure
            logger.error("weightloader: %s", e)
            raise

    def _load_weights(self, model, model_config):
        source = model_source(model_config)
        started = time.perf_counter()
        loader = self.make_loader(source, model_config.dtype)
        weights = loader.get_weights(source)
        feed = _Feed(weights, source, verified=self.verify)
        recorder = LayerRecorder(model)
        loaded = feed_model(model, feed, lambda pairs: recorder.watch(pairs, lambda: feed.current), recorder)
        missing = _not_loaded(model, loaded)
        if missing:
            raise _from_core("MissingTensors", f"{source}: the checkpoint has no tensor for {len(missing)} parameter(s) "
                             f"of vLLM's {type(model).__name__}: {', '.join(missing[:8])}"
                             f"{' ...' if len(missing) > 8 else ''} (loader {type(loader).__name__})",
                             source, missing[0], False)
        logger.info("weightloader: %d tensors from %s with %s in %.2f s%s: %.3f GiB mapped (vLLM copies the "
                    "pages it keeps), %.3f GiB read", feed.count, source, type(loader).__name__,
                    time.perf_counter() - started, _rank_label(), feed.mapped / 2**30, feed.read / 2**30)
        if isinstance(weights, Weights):  # what a refresh compares a newer checkpoint with (vllm_plugin.refresh)
            model._wl_held = {"digests": recorded_digests(weights._source), "layers": recorder.layers,
                              "shapes": {n: list(weights.info(n)["shape"]) for n in weights}}


def feed_model(model, feed, watch=lambda pairs: pairs, mode=contextlib.nullcontext()):
    """model.load_weights over the feed's pairs (through `watch`, under `mode`); vLLM's refusal of a
    tensor becomes weightloader's VllmRefused naming it and its file. Returns what load_weights did."""
    try:
        with mode:
            return model.load_weights(watch(iter(feed)))
    except Error:
        raise
    except Exception as e:  # vLLM's model refused a tensor: say which, and from which file
        raise feed.refused(model, e) from e


class _Feed:
    """The (name, tensor) pairs vLLM's load_weights takes, from whatever get_weights returned (a
    Weights source, a dict, or an iterable of pairs), under the names vLLM's models use: a wrapper
    prefix (module., _orig_mod.) is dropped. A tensor whose stored bytes the library says are usable
    as they are (a local file, the same dtype, no layout change) is a view of a private mapping of
    its file: vLLM's own copy into the parameter is then the only one, and a tensor-parallel rank
    touches only the pages of the rows it keeps. The others are read (decoded, converted) by the
    library. verified (verify=sha256): each file's tensors are read together by the library, which
    hashes every byte it reads and checks the file's digest, and only then handed to vLLM (one
    file's tensors in memory at a time). Remembers the tensor in flight, for errors."""

    def __init__(self, weights, source, verified=False):
        self.weights, self.source = weights, source
        self.current, self.count, self.mapped, self.read = None, 0, 0, 0
        names = list(weights) if isinstance(weights, (Weights, dict)) else None
        self.prefix = detect_name_scheme(names)["prefix"] if names else ""
        self.verified = verified
        if verified and not isinstance(weights, Weights):
            raise _invalid(f"weight_loader_kwargs: verify=sha256 needs a registry loader, whose reads the library "
                           f"hashes; {source} came as Python tensors")
        self.views = _core.PrivateViews(weights._source) if isinstance(weights, Weights) and not verified else None

    def __iter__(self):
        items = self._verified_files() if self.verified else ((n, None) for n in self.weights) if isinstance(
            self.weights, Weights) else (self.weights.items() if isinstance(self.weights, dict) else self.weights)
        for name, tensor in items:
            self.current = name
            if tensor is None:
                tensor = self._tensor(name)
            elif self.verified:
                pass  # read (and counted) by _verified_files
            elif not isinstance(tensor, torch.Tensor):
                raise _from_core("InvalidArgument", f"{self.source}: '{name}' is a {type(tensor).__name__}, "
                                 "not a torch tensor", self.source, name, False)
            else:
                self.read += tensor.numel() * tensor.element_size()
            self.count += 1
            yield (name[len(self.prefix):] if self.prefix and name.startswith(self.prefix) else name), tensor
        self.current = None
        self.views = None  # the mappings go with the last view vLLM keeps

    def _verified_files(self):
        """(name, tensor) of every tensor, file by file, each file read in one load with verify=sha256."""
        by_file = {}
        for name in self.weights:
            by_file.setdefault(self.weights.info(name).get("file", ""), []).append(name)
        core = _core.create_loader("local", {"verify": "sha256", "name_map": "explicit"})
        for names in by_file.values():
            tensors = {}
            for name in names:
                info = self.weights.info(name)
                tensors[name] = torch.empty(info["shape"], dtype=dtypes.to_torch(self.weights._dtype or info["dtype"]))
            params = [(n, dtypes.name_of(t.dtype), list(t.shape), t.data_ptr(), t.numel() * t.element_size())
                      for n, t in tensors.items()]
            core.load(self.weights._source.only(names), params, True, None, "cpu")
            for name in names:
                self.read += tensors[name].numel() * tensors[name].element_size()
                yield name, tensors.pop(name)

    def _tensor(self, name):
        info = self.weights.info(name)
        buffer = self.views.view(name, info["dtype"])
        if buffer is None:
            self.read += info["nbytes"]
            return self.weights[name]
        self.mapped += info["nbytes"]
        return torch.frombuffer(buffer, dtype=dtypes.to_torch(info["dtype"])).reshape(info["shape"])

    def refused(self, model, error):
        name = self.current or ""
        file = self.source
        if name and isinstance(self.weights, Weights) and name in self.weights:
            file = self.weights.info(name).get("file") or file
        what = f"tensor '{name}'" if name else "the checkpoint"
        return _from_core("VllmRefused", f"vLLM's {type(model).__name__} cannot take {what}: "
                          f"{type(error).__name__}: {error}", file, name, False)


def _rank_label():
    from vllm.distributed import get_tensor_model_parallel_rank, get_tensor_model_parallel_world_size
    size = get_tensor_model_parallel_world_size()
    return f" (tensor-parallel rank {get_tensor_model_parallel_rank()} of {size})" if size > 1 else ""


def _not_loaded(model, loaded):
    """Parameters of `model` that its load_weights did not report as filled (vLLM's own check)."""
    if loaded is None:
        return []
    return sorted(n for n, _ in model.named_parameters() if n not in loaded)


def model_source(model_config):
    """The path, model id or URL the weights come from: what a prepared directory names (model_dir),
    else vLLM's model."""
    return model_dir.source_of(model_config.model) or str(model_config.model)


def detect(source):
    """(loader name, kwargs) for a source: the format's loader for a path or URL, hf for a model id
    or a directory URL (which HTTP cannot list for the detection to look into)."""
    if model_dir.looks_like_model_id(source) or ("://" in source and source.endswith("/")):
        return "hf", {}
    return _core.detect_loader(source)


def _import_class(spec):
    module, _, attr = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise _invalid(f"weight_loader '{spec}': {e}") from e
    if not (isinstance(cls, type) and issubclass(cls, BaseWeightLoader)):
        raise _invalid(f"weight_loader '{spec}' is not a weightloader.BaseWeightLoader subclass")
    return cls


def _torch_dtype(name):
    """torch's dtype for a name ("bfloat16", "torch.float16", "bf16"); InvalidArgumentError otherwise."""
    return dtypes.to_torch(dtypes.name_of(name.removeprefix("torch.")))


def _invalid(message):
    return _from_core("InvalidArgument", message, "", "", False)
