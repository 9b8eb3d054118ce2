"""vLLM's loader API over weightloader: BaseWeightLoader, the registry, and the built-in loaders
(hf, local, custom_binary, gguf, llama2c, meta) as Python classes that run on the C++ engine."""
from collections.abc import Mapping

import numpy as np
import torch

from . import _core, dtypes, materialize
from ._params import module_device, module_tensors, progress_for
from .errors import InvalidArgumentError, _from_core


#: What a load did: the C++ LoadReport (loaded, converted, missing, unexpected, bytes_read, seconds,
#: gbps, io_mode, names, ...) as read-only attributes, also items (report["loaded"], dict(report));
#: str(report) is its summary, to_json() the CLI's `load --json`.
LoadReport = _core.LoadReport


class Weights(Mapping):
    """A checkpoint's tensors, read on demand: the seed's Dict[str, Tensor] without the memory.
    weights[name] reads that tensor (in `dtype` when the loader has one); load_weights on it reads
    every tensor straight into the parameters on the C++ engine."""

    def __init__(self, source, dtype=None):
        self._source, self._dtype = source, dtype

    def __getitem__(self, name):
        if name not in self._source:
            raise KeyError(name)
        info = self._source.info(name)
        dtype = self._dtype or info["dtype"]
        out = torch.empty(info["shape"], dtype=dtypes.to_torch(dtype))
        self._source.read_into(name, dtype, out.data_ptr(), out.numel() * out.element_size())
        return out

    def __iter__(self):
        return iter(self._source.keys())

    def __len__(self):
        return len(self._source)

    def __contains__(self, name):
        return name in self._source

    def info(self, name):
        """dtype, shape, stored type, file and offset of one tensor, without reading it."""
        return self._source.info(name)

    def metadata(self):
        return dict(self._source.metadata())

    @property
    def format(self):
        return self._source.format

    @property
    def origin(self):
        return self._source.origin


def _memory_source(weights):
    """A plain dict or an iterable of (name, tensor) pairs (torch tensors or NumPy arrays) as a
    C++ source over their memory: no copy, each owner kept alive while it is read."""
    items = weights.items() if isinstance(weights, Mapping) else weights
    entries = []
    for name, t in items:
        if isinstance(t, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(t) if t.strides and min(t.strides) < 0 else t)
        if not isinstance(t, torch.Tensor):
            raise InvalidArgumentError(f"'{name}' is a {type(t).__name__}, not a torch tensor or NumPy array",
                                       "InvalidArgument", tensor=name)
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        strides = None if t.is_contiguous() else list(t.stride())
        entries.append((name, dtypes.name_of(t.dtype), list(t.shape), strides, t.data_ptr(), t))
    return _core.from_memory("<python tensors>", entries)


class BaseWeightLoader:
    """vLLM's BaseWeightLoader. Subclasses say where to read (get_weights) and may change how it
    goes in (load_weights). The default load_weights fills every parameter and buffer of an
    nn.Module in place, from a Weights source (on the C++ engine) or from a dict or iterable of
    (name, tensor) pairs, with the loader's name mapping and the parameters' dtypes."""

    #: kwargs for the C++ side of the default load_weights (name mapping, io, strict, ...).
    core_kwargs = {}

    def get_weights(self, model_name_or_path):
        raise NotImplementedError(f"{type(self).__name__}.get_weights(model_name_or_path) says where to read")

    def _core_loader(self):
        if getattr(self, "_core", None) is None:
            kwargs = {k: v for k, v in self.core_kwargs.items() if k != "dtype"}
            self._core = _core.create_loader("local", kwargs)
        return self._core

    def load_weights(self, model, weights, strict=None, progress=None, shards=None, assign=False):
        """Fills `model` in place; strict (default: the loader's `strict` kwarg, else True) makes a
        missing or unexpected name an error listing them. progress: a callable (done, total) -> bool
        (False cancels), False for none; by default a bar when stderr is a terminal. shards:
        {parameter: [tensor_parallel.Shard]}, parameters filled from slices of checkpoint tensors
        (only those bytes are read) instead of the whole tensor of their name. assign: the module's
        tensors may be replaced (load_into passes it for a meta-device module and assign=True); with
        the zero_copy kwarg, a parameter whose stored bytes are usable as they are then becomes a
        writable view of a private copy-on-write mapping of its file, not read. Without assign every
        parameter is read into the module's own memory. An LLM's engine module maps checkpoint
        names onto its fused and sharded parameters itself."""
        if getattr(model, "wl_engine_rank", None) is not None:
            return model.load_weights(weights)
        source = weights._source if isinstance(weights, Weights) else _memory_source(weights)
        params = module_tensors(model)
        if shards:
            params = [(*p, [tuple(s) for s in shards[p[0]]] if p[0] in shards else None) for p in params]
        report, views = self._core_loader().load(source, params, strict, progress_for(progress, "loading"),
                                                 module_device(model), replace=assign)
        if views:
            materialize.install_views(model, views)
        return report


def detect_name_scheme(names):
    """The naming scheme that explains the most of `names` (checkpoint or state_dict keys, or a
    Weights / module): {"scheme": "hf" | "meta" | "torchtune" | "gguf" | "", "prefix": wrapper
    prefix such as "module.", "matched": n, "total": n, "summary": "meta (prefix _orig_mod.)"}."""
    if isinstance(names, torch.nn.Module):
        names = names.state_dict().keys()
    return _core.detect_name_scheme([str(n) for n in names])


def _kwarg_value(name, value):
    if name == "dtype" and value is not None:
        return dtypes.name_of(value)
    if isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    return value


class CoreWeightLoader(BaseWeightLoader):
    """A loader of the C++ registry, by name. Its kwargs are checked there: an unknown one is a
    ValueError listing those accepted."""

    loader_name = None

    def __init__(self, name=None, **kwargs):
        self.loader_name = name or self.loader_name
        self.kwargs = {k: _kwarg_value(k, v) for k, v in kwargs.items() if v is not None}
        self._core = _core.create_loader(self.loader_name, self.kwargs)
        self.dtype = kwargs.get("dtype")

    def get_weights(self, model_name_or_path, progress=None):
        """The checkpoint at a path or URL, or a model id (org/name) from the Hugging Face cache,
        downloaded from HF_ENDPOINT into it when missing (the hf loader). progress: a callable
        (done, total) -> bool for the download (False cancels), False for none; by default a bar
        when stderr is a terminal."""
        return Weights(self._core.get_weights(str(model_name_or_path), progress_for(progress, "downloading")),
                       self._core.dtype)

    def mirror(self, weights):
        """(name, dtype, shape) of the parameters a model mirroring the checkpoint would have."""
        return self._core.mirror(weights._source)


class HfWeightLoader(CoreWeightLoader):
    """A Hugging Face directory or a model id (org/name) from the Hugging Face cache, downloaded from
    the hub when missing (revision, cache_dir, download=False to only read the cache) and loaded
    while it arrives (stream=False: download the whole snapshot first); safetensors preferred,
    index files honoured."""
    loader_name = "hf"

    def __init__(self, revision=None, cache_dir=None, download=None, stream=None, **kwargs):
        super().__init__(revision=revision, cache_dir=None if cache_dir is None else str(cache_dir), download=download,
                         stream=stream, **kwargs)


class LocalWeightLoader(CoreWeightLoader):
    """A checkpoint file in any format, or the files of a directory matching file_pattern."""
    loader_name = "local"

    def __init__(self, file_pattern=None, **kwargs):
        super().__init__(file_pattern=file_pattern, **kwargs)


class CustomBinaryWeightLoader(CoreWeightLoader):
    """The seed's custom binary format: a directory with meta.txt and model.bin (F32)."""
    loader_name = "custom_binary"


class GgufWeightLoader(LocalWeightLoader):
    """A GGUF file (or a split model's first file), Llama tensors under Hugging Face names."""
    loader_name = "gguf"


class Llama2cWeightLoader(LocalWeightLoader):
    """A llama2.c checkpoint (v0, v1 float32, v2 int8), under Hugging Face names."""
    loader_name = "llama2c"


class MetaWeightLoader(CoreWeightLoader):
    """Meta's original Llama checkpoint (params.json + consolidated.NN.pth shards) as one model,
    under Hugging Face names."""
    loader_name = "meta"


_BUILTIN_CLASSES = {"hf": HfWeightLoader, "local": LocalWeightLoader, "custom_binary": CustomBinaryWeightLoader,
                    "gguf": GgufWeightLoader, "llama2c": Llama2cWeightLoader, "meta": MetaWeightLoader}


class WeightLoaderRegistry:
    """Loaders by name: the C++ registry's and those registered from Python share one namespace."""

    _python = {}

    @classmethod
    def register(cls, name, loader_cls=None):
        """register(name, cls), or @register(name) on a class. A taken name is a ValueError."""
        if loader_cls is None:
            return lambda c: cls.register(name, c) or c
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError("a loader name must be a non-empty string", "InvalidArgument")
        if name in cls._python or name in _core.list_loaders():
            raise InvalidArgumentError(f"a loader named '{name}' is already registered", "LoaderExists")
        if not (isinstance(loader_cls, type) and issubclass(loader_cls, BaseWeightLoader)):
            raise InvalidArgumentError(f"{loader_cls!r} is not a BaseWeightLoader subclass", "InvalidArgument")
        cls._python[name] = loader_cls
        return None

    @classmethod
    def list_available(cls):
        return sorted(set(_core.list_loaders()) | set(cls._python))

    @classmethod
    def get(cls, name):
        """The class registered under `name` (a Python class for the built-ins too)."""
        if name in cls._python:
            return cls._python[name]
        if name in _BUILTIN_CLASSES:
            return _BUILTIN_CLASSES[name]
        if name in _core.list_loaders():
            return type(f"CoreWeightLoader_{name}", (CoreWeightLoader,), {"loader_name": name})
        raise _from_core("UnknownLoader", f"no loader named '{name}'; available: {', '.join(cls.list_available())}",
                         "", "", False)

    @classmethod
    def create(cls, name, **kwargs):
        """An instance: a Python class receives the kwargs as constructor arguments; a C++ loader
        checks them as the C++ registry does."""
        return cls.get(name)(**kwargs)
