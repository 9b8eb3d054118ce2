"""A torch module built from a dict of dotted parameter names and shapes: what a user's model looks
like to a loader, for tests that load into modules of any naming scheme."""
import torch


class Named(torch.nn.Module):
    """A module whose state_dict holds exactly `shapes` (dotted names), of `dtype`, every element `fill`
    (NaN shows a parameter the load never wrote)."""

    def __init__(self, shapes, dtype=torch.float32, fill=0.0):
        super().__init__()
        for name, shape in shapes.items():
            owner = self
            *path, leaf = name.split(".")
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, torch.nn.Module())
                owner = getattr(owner, part)
            owner.register_parameter(leaf, torch.nn.Parameter(torch.full(shape, fill, dtype=dtype), requires_grad=False))
