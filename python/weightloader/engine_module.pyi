from typing import Any, Mapping

import torch

from .loaders import LoadReport, _WeightsLike

class EngineModule(torch.nn.Module):
    """One tensor-parallel rank's parameters under the checkpoint's names, each a view into the
    engine's (fused, per-rank) memory: state_dict(), named_parameters(), load_state_dict() and
    param.data.copy_() fill the engine in place."""

    wl_engine_rank: int

    def __init__(self, core: Any, rank: int) -> None: ...
    def load_weights(self, weights: _WeightsLike) -> LoadReport:
        """Loads checkpoint tensors (a Weights source, a dict, or (name, tensor) pairs) into this
        rank's parameters, slices and fused blocks included. Returns the LoadReport."""
    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> Any:
        """torch's load_state_dict: each whole checkpoint tensor sliced to this rank's part and
        copied into the engine's memory; returns (missing_keys, unexpected_keys)."""
