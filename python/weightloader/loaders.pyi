"""vLLM's loader API over weightloader: BaseWeightLoader, the registry, and the built-in loaders
(hf, local, custom_binary, gguf, llama2c) as Python classes that run on the C++ engine."""
import os
from typing import Any, Callable, ClassVar, Iterable, Iterator, Literal, Mapping, Sequence, TypedDict, TypeVar, Union, overload

import numpy as np
import torch

from . import _core
from .dtypes import _DTypeLike

_Path = Union[str, os.PathLike[str]]
# A tensor a Python loader may hand to load_weights: a torch tensor or a NumPy array (CPU, any strides).
_TensorLike = Union[torch.Tensor, np.ndarray[Any, Any]]
# What get_weights may return: a Weights source, a dict, or an iterable of (name, tensor) pairs.
_WeightsLike = Union["Weights", Mapping[str, _TensorLike], Iterable[tuple[str, _TensorLike]]]
# progress=: a callable (done_bytes, total_bytes) -> bool (False cancels), False for none, None for
# the default (a tqdm bar when stderr is a terminal).
_Progress = Union[Callable[[int, int], Union[bool, None]], bool, None]
# A name list: one string (';'-separated) or a sequence of strings.
_Names = Union[str, Sequence[str]]
_IoMode = Literal["auto", "mmap", "pread", "direct", "uring"]
_L = TypeVar("_L", bound=type["BaseWeightLoader"])

class _TensorInfo(TypedDict):
    name: str
    dtype: str
    shape: list[int]
    stored_type: str
    file: str
    offset: int
    nbytes: int
    raw: bool

from ._core import LoadReport as LoadReport

class Weights(Mapping[str, torch.Tensor]):
    """A checkpoint's tensors, read on demand: the seed's Dict[str, Tensor] without the memory."""

    def __init__(self, source: _core.Source, dtype: str | None = None) -> None: ...
    def __getitem__(self, name: str) -> torch.Tensor:
        """Reads that tensor (in the loader's dtype when it has one)."""
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...
    def info(self, name: str) -> _TensorInfo:
        """dtype, shape, stored type, file and offset of one tensor, without reading it."""
    def metadata(self) -> dict[str, str]:
        """The checkpoint's metadata (e.g. safetensors' __metadata__, GGUF keys) as strings."""
    @property
    def format(self) -> str:
        """The format the tensors were read from: "safetensors", "gguf", "llama2c", ..."""
    @property
    def origin(self) -> str:
        """The path the tensors came from."""

class BaseWeightLoader:
    """vLLM's BaseWeightLoader. Subclasses say where to read (get_weights) and may change how it
    goes in (load_weights)."""

    core_kwargs: ClassVar[dict[str, Any]]
    """kwargs for the C++ side of the default load_weights (name mapping, io, strict, ...)."""

    def get_weights(self, model_name_or_path: _Path) -> _WeightsLike:
        """The checkpoint's tensors: a Weights source, a dict or an iterable of (name, tensor) pairs."""
    def load_weights(self, model: torch.nn.Module, weights: _WeightsLike, strict: bool | None = None,
                     progress: _Progress = None,
                     shards: Mapping[str, Sequence[tuple[str, int, int, int, int]]] | None = None,
                     assign: bool = False) -> LoadReport:
        """Fills `model` in place; strict (default: the loader's `strict` kwarg, else True) makes a
        missing or unexpected name an error listing them. shards: parameters filled from slices of
        checkpoint tensors (tensor_parallel.Shard), reading only those bytes."""

class CoreWeightLoader(BaseWeightLoader):
    """A loader of the C++ registry, by name. Its kwargs are checked there: an unknown one is a
    ValueError listing those accepted."""

    loader_name: str | None
    kwargs: dict[str, Any]
    dtype: _DTypeLike | None

    def __init__(self, name: str | None = None, *, dtype: _DTypeLike | None = ..., strict: bool = ...,
                 allow_reshape: bool = ..., strip_prefix: _Names = ..., add_prefix: str = ...,
                 rename: _Names = ..., regex_rename: _Names = ..., drop: _Names = ..., concurrency: int = ...,
                 io: _IoMode = ..., staging_bytes: int = ..., prefault: bool = ..., zero_copy: bool = ...,
                 verify: Literal["none", "sha256"] = ...,
                 name_map: str = ..., **kwargs: Any) -> None: ...
    def get_weights(self, model_name_or_path: _Path,
                    progress: _Progress = None) -> Weights:
        """The checkpoint at `model_name_or_path`, opened (its tensors are read on demand); a model id
        (org/name) missing from the Hugging Face cache is downloaded first (the hf loader), reporting
        to `progress` (False from it cancels)."""
    def mirror(self, weights: Weights) -> list[tuple[str, str, list[int]]]:
        """(name, dtype, shape) of the parameters a model mirroring the checkpoint would have."""

class HfWeightLoader(CoreWeightLoader):
    """A Hugging Face directory or a model id (org/name) from the Hugging Face cache, downloaded from
    the hub when missing (revision, cache_dir, download=False to only read the cache) and loaded
    while it arrives (stream=False: download the whole snapshot first); safetensors preferred,
    index files honoured."""

    def __init__(self, revision: str | None = None, cache_dir: _Path | None = None, download: bool | None = None,
                 stream: bool | None = None, *,
                 dtype: _DTypeLike | None = ..., strict: bool = ...,
                 allow_reshape: bool = ..., strip_prefix: _Names = ..., add_prefix: str = ...,
                 rename: _Names = ..., regex_rename: _Names = ..., drop: _Names = ..., concurrency: int = ...,
                 io: _IoMode = ..., staging_bytes: int = ..., prefault: bool = ..., zero_copy: bool = ...,
                 verify: Literal["none", "sha256"] = ...,
                 name_map: str = ..., **kwargs: Any) -> None: ...

class LocalWeightLoader(CoreWeightLoader):
    """A checkpoint file in any format, or the files of a directory matching file_pattern."""

    def __init__(self, file_pattern: str | None = None, *, dtype: _DTypeLike | None = ..., strict: bool = ...,
                 allow_reshape: bool = ..., strip_prefix: _Names = ..., add_prefix: str = ...,
                 rename: _Names = ..., regex_rename: _Names = ..., drop: _Names = ..., concurrency: int = ...,
                 io: _IoMode = ..., staging_bytes: int = ..., prefault: bool = ..., zero_copy: bool = ...,
                 verify: Literal["none", "sha256"] = ...,
                 name_map: str = ..., **kwargs: Any) -> None: ...

class CustomBinaryWeightLoader(CoreWeightLoader):
    """The seed's custom binary format: a directory with meta.txt and model.bin (F32)."""

class GgufWeightLoader(LocalWeightLoader):
    """A GGUF file (or a split model's first file), Llama tensors under Hugging Face names."""

class Llama2cWeightLoader(LocalWeightLoader):
    """A llama2.c checkpoint (v0, v1 float32, v2 int8), under Hugging Face names."""

class MetaWeightLoader(CoreWeightLoader):
    """Meta's original Llama checkpoint (params.json + consolidated.NN.pth shards) as one model,
    under Hugging Face names."""

class _NameScheme(TypedDict):
    scheme: str
    prefix: str
    matched: int
    total: int
    summary: str

def detect_name_scheme(names: Union[Iterable[str], torch.nn.Module]) -> _NameScheme:
    """The naming scheme that explains the most of `names` (checkpoint or state_dict keys, or a
    Weights / module): hf, meta, torchtune or gguf (empty: none), with its wrapper prefix."""

class WeightLoaderRegistry:
    """Loaders by name: the C++ registry's and those registered from Python share one namespace."""

    @overload
    @classmethod
    def register(cls, name: str, loader_cls: type[BaseWeightLoader]) -> None:
        """register(name, cls), or @register(name) on a class. A taken name is a ValueError."""
    @overload
    @classmethod
    def register(cls, name: str, loader_cls: None = None) -> Callable[[_L], _L]: ...
    @classmethod
    def list_available(cls) -> list[str]:
        """Every registered loader name, sorted."""
    @classmethod
    def get(cls, name: str) -> type[BaseWeightLoader]:
        """The class registered under `name` (a Python class for the built-ins too)."""
    @classmethod
    def create(cls, name: str, **kwargs: Any) -> BaseWeightLoader:
        """An instance: a Python class receives the kwargs as constructor arguments; a C++ loader
        checks them as the C++ registry does."""
