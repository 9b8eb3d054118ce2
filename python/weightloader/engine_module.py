"""The module an LLM hands to a Python loader: one tensor-parallel rank's parameters, named as the
checkpoint names them, each a view into the engine's (fused, per-rank) memory."""

import torch

from . import dtypes
from .errors import InvalidArgumentError
from .loaders import Weights, _memory_source


class EngineModule(torch.nn.Module):
    """One rank's parameters under the checkpoint's names (model.layers.N.self_attn.q_proj.weight, ...):
    state_dict(), named_parameters() and load_state_dict() speak the checkpoint's naming, and each
    parameter is a view into the engine's memory (q_proj, k_proj and v_proj are rows of the engine's
    fused qkv_proj), so `param.data.copy_(weights[name])` and `load_state_dict(weights)` fill the
    engine in place, with no copy kept. Under tensor_parallel_size > 1 each view holds this rank's
    slice: load_state_dict and load_weights slice the checkpoint's tensors themselves; a plain
    copy_ of a whole tensor cannot fit. load_weights(weights) maps names as vLLM's models do
    (auto naming, fused and sharded parameters) and reads on the C++ engine."""

    def __init__(self, core, rank):
        super().__init__()
        self.wl_engine_rank = rank
        self._wl_core = core
        self._wl_slices = {}  # checkpoint name -> (dim, begin, end): the part of its tensor this rank holds
        self._wl_parts = {}  # checkpoint name -> [(begin, end), ...]: its row ranges this rank holds, in order
        self.wl_filled = set()  # checkpoint names load_weights filled (the engine's plan says which)
        for name, dtype, shape, buffer, shards in core.rank_parameters(rank):
            tensor = torch.frombuffer(buffer, dtype=dtypes.to_torch(dtype)).view(tuple(shape))
            if not shards:
                self._wl_add(name, tensor)
            if len(shards) > 1 and len({s[0] for s in shards}) == 1:
                # Fused in the checkpoint as in the engine (Phi-3's qkv_proj, gate_up_proj): the
                # parameter is this rank's rows of each part, stacked.
                self._wl_add(shards[0][0], tensor)
                self._wl_parts[shards[0][0]] = [(begin, end) for _, _, begin, end, _ in sorted(shards, key=lambda s: s[4])]
                continue
            for source, dim, begin, end, row_offset in shards:
                extent = (tensor.shape[dim] if end is None else end - begin) if dim == 0 else tensor.shape[0]
                self._wl_add(source, tensor.narrow(0, row_offset, extent) if dim == 0 else tensor)
                self._wl_slices[source] = (dim, begin, end)

    def _wl_add(self, name, view):
        *path, leaf = name.split(".")
        module = self
        for part in path:
            if part not in module._modules:
                module.add_module(part, torch.nn.Module())
            module = module._modules[part]
        module.register_parameter(leaf, torch.nn.Parameter(view, requires_grad=False))

    def load_weights(self, weights):
        """Loads checkpoint tensors (a Weights source, a dict, or (name, tensor) pairs) into this
        rank's parameters on the C++ engine, slices and fused blocks included. Returns the LoadReport."""
        source = weights._source if isinstance(weights, Weights) else _memory_source(weights)
        report = self._wl_core.load_rank(self.wl_engine_rank, source, False)
        # The plan's missing list names a whole parameter, or a shard as "<engine name> (from <name>)".
        left = {m[m.index(" (from ") + 7:-1] if m.endswith(")") and " (from " in m else m for m in report.missing}
        self.wl_filled |= {name for name, _ in self.named_parameters() if name not in left}
        return report

    def load_state_dict(self, state_dict, strict=True):
        """torch's load_state_dict over the views: each checkpoint tensor (whole, as the checkpoint
        holds it) is sliced to this rank's part and copied into the engine's memory, converting its
        dtype. Returns torch's (missing_keys, unexpected_keys)."""
        own = dict(self.named_parameters())
        missing = [n for n in own if n not in state_dict]
        unexpected = [n for n in state_dict.keys() if n not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: missing keys {missing}, "
                               f"unexpected keys {unexpected}")
        with torch.no_grad():
            for name, param in own.items():
                if name in state_dict:
                    param.copy_(self._wl_part(name, torch.as_tensor(state_dict[name]), param))
        return torch.nn.modules.module._IncompatibleKeys(missing, unexpected)

    def _wl_part(self, name, tensor, param):
        """This rank's part of the checkpoint tensor `name`."""
        if name in self._wl_parts and tensor.dim() and all(end <= tensor.shape[0] for _, end in self._wl_parts[name]):
            tensor = torch.cat([tensor.narrow(0, begin, end - begin) for begin, end in self._wl_parts[name]])
        if tuple(tensor.shape) != tuple(param.shape) and name in self._wl_slices:
            dim, begin, end = self._wl_slices[name]
            if dim < tensor.dim() and (end or tensor.shape[dim]) <= tensor.shape[dim]:
                tensor = tensor.narrow(dim, begin, (tensor.shape[dim] if end is None else end) - begin)
        if tuple(tensor.shape) != tuple(param.shape):
            raise InvalidArgumentError(
                f"tensor '{name}': the checkpoint's shape {list(tensor.shape)} does not give rank "
                f"{self.wl_engine_rank}'s part {list(param.shape)} [ShapeMismatch]", "ShapeMismatch", "", name)
        return tensor
