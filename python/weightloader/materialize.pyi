import torch

def needs_memory(module: torch.nn.Module) -> bool:
    """True when some parameter or buffer of `module` is on the meta device."""
def allocate(module: torch.nn.Module, replace_all: bool = False) -> None:
    """Gives every meta parameter and persistent buffer of `module` (every one, with replace_all)
    fresh host memory of its dtype and shape, uninitialised until a load fills it."""
