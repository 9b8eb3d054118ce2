"""load_into(module, path): an existing torch module's parameters and buffers filled in place,
straight from the checkpoint into each tensor's memory, as load_state_dict would leave them."""
import os
from typing import Any, Mapping, NamedTuple, Union

import torch

from .dtypes import _DTypeLike
from .loaders import BaseWeightLoader, _Progress

class IncompatibleKeys(NamedTuple):
    """(missing_keys, unexpected_keys), as torch's load_state_dict returns them."""

    missing_keys: list[str]
    unexpected_keys: list[str]

def load_into(module: torch.nn.Module, path: Union[str, os.PathLike[str]],
              loader: Union[str, type[BaseWeightLoader], BaseWeightLoader] = "auto", strict: bool = True,
              dtype: _DTypeLike | None = None, name_map: Union[str, Mapping[str, str], None] = None,
              progress: _Progress = None, **kwargs: Any) -> IncompatibleKeys:
    """Fills `module` from `path` in place and returns (missing_keys, unexpected_keys)."""
