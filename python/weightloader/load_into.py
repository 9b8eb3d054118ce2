"""load_into(module, path): an existing torch module's parameters and buffers filled in place,
straight from the checkpoint into each tensor's memory, as load_state_dict would leave them."""
from collections import namedtuple

from . import _core
from .loaders import WeightLoaderRegistry, CoreWeightLoader, BaseWeightLoader

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _name_map_kwargs(name_map):
    """"auto": the naming schemes recognised (the name_map kwarg). {"old.": "new.", "a.b": "c.d"}:
    keys ending with '.' rename a prefix, others one name."""
    if not name_map:
        return {}
    if isinstance(name_map, str):
        return {"name_map": name_map}
    renames, regex = [], []
    for old, new in name_map.items():
        if old.endswith("."):
            regex.append(f"^{old.replace('.', chr(92) + '.')}=>{new}")
        else:
            renames.append(f"{old}={new}")
    out = {}
    if renames:
        out["rename"] = ";".join(renames)
    if regex:
        out["regex_rename"] = ";".join(regex)
    return out


def load_into(module, path, loader="auto", strict=True, dtype=None, name_map=None, progress=None, **kwargs):
    """Fills `module` from `path` in place and returns (missing_keys, unexpected_keys).

    loader: a registered name, "auto" (chosen by content), a class or an instance. kwargs go to the
    loader (strip_prefix, io, concurrency, ...). dtype: the module is converted to it first (with
    Module.to), then filled; without it every tensor is converted to its parameter's dtype.
    strict: a missing or unexpected name raises, listing them. Shapes must match. name_map: "auto"
    recognises the checkpoint's naming scheme and the module's (Hugging Face, Meta, torchtune, GGUF,
    vLLM's fused qkv_proj/gate_up_proj; wrapper prefixes such as module. or _orig_mod.) and maps
    one onto the other, q/k rows included; or a dict of renames (see _name_map_kwargs)."""
    if dtype is not None:
        import torch
        from . import dtypes
        module.to(dtypes.to_torch(dtypes.name_of(dtype)))
    kwargs.update(_name_map_kwargs(name_map))
    if isinstance(loader, BaseWeightLoader):
        instance = loader
    else:
        if loader == "auto":
            loader, detected = _core.detect_loader(str(path))
            kwargs = {**detected, **kwargs}
        cls = WeightLoaderRegistry.get(loader) if isinstance(loader, str) else loader
        instance = cls(**kwargs)
    weights = instance.get_weights(str(path))
    report = instance.load_weights(module, weights, strict=strict, progress=progress) \
        if isinstance(instance, CoreWeightLoader) else instance.load_weights(module, weights)
    if report is None:
        return IncompatibleKeys([], [])
    return IncompatibleKeys(list(report["missing"]), list(report["unexpected"]))
