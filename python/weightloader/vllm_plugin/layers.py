"""Which of vLLM's layers each checkpoint tensor went into, recorded during the first load, and the
tensors a refresh must read so that every layer it rebuilds is filled whole.

vLLM rebuilds a layer as a whole on a reload (its weights back to the checkpoint's layout, then
processed again: the CPU backend's GEMM packing, quantization), and a layer's parameters can come
from several tensors (fused qkv_proj from q/k/v, gate_up_proj, stacked experts) whose unchanged
parts the engine no longer holds in checkpoint form. So a refresh reads all tensors of a layer in
which one tensor changed; which those are only vLLM's model class knows, and its load_weights says
it by writing: the recorder sees every in-place write into a parameter or buffer, and from which
tensor's memory it came."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode


class LayerRecorder(TorchDispatchMode):
    """While active, maps each checkpoint tensor fed through watch() to the names of the layers
    (modules with parameters or buffers of their own) whose tensors were written from it: by the
    source's storage, else (a converted copy, a post-load transform) the tensor last fed."""

    def __init__(self, model):
        super().__init__()
        self.layers = {}  # checkpoint tensor -> set of layer names
        self._owners = {}  # storage address of a parameter or buffer -> layer names
        for name, module in model.named_modules():
            for tensor in [*module._parameters.values(), *module._buffers.values()]:
                if tensor is not None and tensor.untyped_storage().data_ptr():
                    self._owners.setdefault(tensor.untyped_storage().data_ptr(), set()).add(name)
        self._fed, self._last = {}, None

    def watch(self, pairs, names):
        """The (name, tensor) pairs of `pairs`, remembering each tensor's storage under the
        checkpoint name `names()` gives while it is fed (vLLM's names may have lost a prefix)."""
        for vllm_name, tensor in pairs:
            self._last = names()
            self.layers.setdefault(self._last, set())
            self._fed[tensor.untyped_storage().data_ptr()] = self._last
            yield vllm_name, tensor

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func._schema.name.endswith("_") and args and isinstance(args[0], torch.Tensor):
            owners = self._owners.get(args[0].untyped_storage().data_ptr())
            if owners:
                source = args[1] if len(args) > 1 and isinstance(args[1], torch.Tensor) else None
                name = self._fed.get(source.untyped_storage().data_ptr()) if source is not None else None
                if name or self._last:
                    self.layers.setdefault(name or self._last, set()).update(owners)
        return out


def closure(layers, changed):
    """(the layers to rebuild, the tensors to read): the layers the changed tensors went into, and
    every tensor that went into one of them, until no layer is left part-filled."""
    touched, names = set(), set()
    pending = [n for n in changed if layers.get(n)]
    while pending:
        name = pending.pop()
        if name in names:
            continue
        names.add(name)
        new = layers[name] - touched
        touched |= new
        pending += [n for n, ls in layers.items() if ls & new and n not in names]
    return sorted(touched), sorted(names)
