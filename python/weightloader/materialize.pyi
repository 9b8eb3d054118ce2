from typing import Any, Mapping

import torch

def needs_memory(module: torch.nn.Module) -> bool:
    """True when some parameter or buffer of `module` is on the meta device."""
def allocate(module: torch.nn.Module, replace_all: bool = False) -> None:
    """Gives every meta parameter and persistent buffer of `module` (every one, with replace_all)
    fresh host memory of its dtype and shape, uninitialised until a load fills it."""
def install_views(module: torch.nn.Module, views: Mapping[str, Any]) -> None:
    """Replaces each tensor that `views` names (state_dict names -> buffers of their bytes) with a
    tensor over that buffer, of the same dtype and shape; tied slots get one new tensor."""
