"""load_into(module, path): an existing torch module's parameters and buffers filled in place,
straight from the checkpoint into each tensor's memory, as load_state_dict would leave them."""
import os
from typing import Any, Mapping, NamedTuple, Sequence, Union

import torch

from .dtypes import _DTypeLike
from .loaders import BaseWeightLoader, LoadReport, _Progress

class IncompatibleKeys(NamedTuple):
    """(missing_keys, unexpected_keys), as torch's load_state_dict returns them; `report` is the
    LoadReport (bytes_read, seconds, tp_rank, ...) or None for a loader that gives none."""

    missing_keys: list[str]
    unexpected_keys: list[str]
    @property
    def report(self) -> LoadReport | None: ...

def load_into(module: torch.nn.Module, path: Union[str, os.PathLike[str]],
              loader: Union[str, type[BaseWeightLoader], BaseWeightLoader] = "auto", strict: bool = True,
              dtype: _DTypeLike | None = None, name_map: Union[str, Mapping[str, str], None] = None,
              progress: _Progress = None, tp_rank: int | None = None, tp_size: int | None = None,
              shard_dims: Mapping[str, int | None] | None = None, fused: Mapping[str, Sequence[str]] | None = None,
              tp_group: Any = None, assign: bool = False, **kwargs: Any) -> IncompatibleKeys:
    """Fills `module` from `path` in place and returns (missing_keys, unexpected_keys), with the
    load's report as `.report`; tp_rank/tp_size (default: torch.distributed's) load one rank's slices.
    A module on the meta device (or any, with assign=True) gets memory allocated by the loader."""

def make_path_loader(path: Any, loader: Any, kwargs: dict[str, Any],
                     choice: tuple[str, dict[str, Any]] | None = None) -> tuple[BaseWeightLoader, Any]: ...
