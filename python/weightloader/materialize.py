"""Modules built without memory (on torch's meta device, as vLLM and transformers build big models),
or load_into(..., assign=True): weightloader allocates each parameter and persistent buffer itself,
huge-page backed, and installs it in the module before the load fills it in place (torch's own
allocations fault 4 KiB at a time). Tied parameters stay tied (one allocation per tensor object),
Parameter subclasses and requires_grad are kept."""
import torch

from . import _core


def needs_memory(module):
    """True when some parameter or buffer of `module` is on the meta device."""
    return any(t.is_meta for t in _tensors(module))


def allocate(module, replace_all=False):
    """Gives every meta tensor of `module` (every tensor, with replace_all) fresh host memory of its
    dtype and shape; the values are uninitialised until the load fills them."""
    fresh = {}  # id of the old tensor -> its replacement, so that tied names share one
    for owner, kind, name, old in _slots(module):
        if not (old.is_meta or replace_all):
            continue
        new = fresh.get(id(old))
        if new is None:
            new = fresh[id(old)] = _with_memory(old)
        getattr(owner, kind)[name] = new


def install_views(module, views):
    """Replaces each tensor that `views` names ({state_dict name: a buffer of its bytes, as a
    zero-copy load gives them}) with a tensor over that buffer, of the same dtype and shape; a
    tensor held in several slots (tied) is replaced in each, by one new tensor."""
    chosen = {}  # id of the old tensor -> its buffer
    for name, t in module.state_dict(keep_vars=True).items():
        if name in views:
            chosen.setdefault(id(t), views[name])
    fresh = {}
    for owner, kind, name, old in _slots(module):
        buffer = chosen.get(id(old))
        if buffer is None:
            continue
        new = fresh.get(id(old))
        if new is None:
            data = torch.frombuffer(buffer, dtype=old.dtype, count=old.numel()).view(old.shape)
            new = fresh[id(old)] = _like(old, data)
        getattr(owner, kind)[name] = new


def _with_memory(old):
    return _like(old, _empty(old.dtype, old.shape))


def _like(old, data):
    """`data` as `old` was: a Parameter (of its subclass where it can be) with its requires_grad, or a plain tensor."""
    if isinstance(old, torch.nn.Parameter):
        try:
            return type(old)(data, requires_grad=old.requires_grad)
        except TypeError:  # a subclass whose constructor wants more: a plain Parameter
            return torch.nn.Parameter(data, requires_grad=old.requires_grad)
    return data


def _empty(dtype, shape):
    itemsize = torch.empty((), dtype=dtype).element_size()
    count = 1
    for d in shape:
        count *= d
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    memory = _core.host_memory(count * itemsize)
    return torch.frombuffer(memory, dtype=dtype, count=count).view(shape)


def _slots(module):
    """(owning module, "_parameters" | "_buffers", name, tensor) of every parameter and persistent
    buffer (what state_dict holds, so what a load fills), each slot once. A non-persistent buffer
    on the meta device stays there: no checkpoint fills it, and garbage would go unnoticed."""
    for sub in module.modules():  # each submodule once, a shared one too
        for name, t in sub._parameters.items():
            if t is not None:
                yield sub, "_parameters", name, t
        for name, t in sub._buffers.items():
            if t is not None and name not in sub._non_persistent_buffers_set:
                yield sub, "_buffers", name, t


def _tensors(module):
    return (t for _, _, _, t in _slots(module))
