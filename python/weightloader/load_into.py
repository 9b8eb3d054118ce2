"""load_into(module, path): an existing torch module's parameters and buffers filled in place,
straight from the checkpoint into each tensor's memory, as load_state_dict would leave them."""
import re
from collections import namedtuple

from . import _core, materialize, tensor_parallel
from ._params import module_tensors
from .errors import _from_core
from .loaders import WeightLoaderRegistry, CoreWeightLoader, BaseWeightLoader, LoadReport, Weights


class IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """(missing_keys, unexpected_keys), as torch's load_state_dict returns them; `report` is the
    LoadReport (bytes_read, seconds, tp_rank, ...) or None for a loader that gives none."""

    @property
    def report(self):
        return self.__dict__.get("_report")


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
            regex.append(f"^{re.escape(old)}=>{new}")
        else:
            renames.append(f"{old}={new}")
    out = {}
    if renames:
        out["rename"] = ";".join(renames)
    if regex:
        out["regex_rename"] = ";".join(regex)
    return out


def load_into(module, path, loader="auto", strict=True, dtype=None, name_map=None, progress=None,
              tp_rank=None, tp_size=None, shard_dims=None, fused=None, tp_group=None, assign=False, **kwargs):
    """Fills `module` from `path` in place and returns (missing_keys, unexpected_keys), with the
    load's report as `.report`.

    loader: a registered name, "auto" (chosen by content), a class or an instance. kwargs go to the
    loader (strip_prefix, io, concurrency, verify="sha256": each file hashed from the bytes the load
    reads and checked against what names it, ...). dtype: the module is converted to it first (with
    Module.to), then filled; without it every tensor is converted to its parameter's dtype.
    strict: a missing or unexpected name raises, listing them. Shapes must match. A module on a
    CUDA device is filled where it is: read and converted on the host, copied through pinned
    buffers (the staging_bytes kwarg bounds them); its tensors must all be on one device. name_map: "auto"
    recognises the checkpoint's naming scheme and the module's (Hugging Face, Meta, torchtune, GGUF,
    vLLM's fused qkv_proj/gate_up_proj; wrapper prefixes such as module. or _orig_mod.) and maps
    one onto the other, q/k rows included; or a dict of renames (see _name_map_kwargs).

    A module built on torch's meta device (torch.device("meta"), vLLM's and transformers' way to
    build big models) gets its memory from the loader: each parameter and persistent buffer is
    allocated (huge-page backed, in its declared dtype and shape), installed in the module (tied
    ones stay tied) and filled. assign=True does the same for a module that has memory (its tensors
    are replaced, as load_state_dict(assign=True) replaces them), the fastest way to fill a module
    that torch allocated. For such modules zero_copy=True reads nothing for a tensor whose stored
    bytes are usable as they are (same dtype, raw, contiguous, aligned, in a local file): its
    parameter becomes a writable view of a private copy-on-write mapping of the file (a write never
    reaches the file; the report's zero_copy lists them). A module whose tensors have memory and
    assign=False is always filled in place, zero_copy or not.

    Tensor parallelism: `module` is rank tp_rank's of tp_size (default: torch.distributed's rank
    and world size of tp_group when it is initialised, else 0 and 1), its parameters holding only
    that rank's slices, and only those bytes are read (see weightloader.tensor_parallel for the
    rule, shard_dims and fused). The slices are planned in the module's names after the whole name
    mapping, so tensor parallelism composes with every name_map, "auto" included. With torch.distributed initialised, every rank of tp_group checks
    that all opened the same checkpoint and, at the end, that all loaded (the C++ rule, wl::agree): a
    failure anywhere raises the failed rank's error on every rank, naming it, and a rank that died or
    hung RankFailed, within the process group's timeout (init_process_group(timeout=))."""
    import torch
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"load_into fills a torch.nn.Module in place, not a {type(module).__name__}; to read "
                        f"tensors into a dict use weightloader.load_file(path) or a loader's get_weights(path)")
    if dtype is not None:
        from . import dtypes
        module.to(dtypes.to_torch(dtypes.name_of(dtype)))
    replaceable = assign or materialize.needs_memory(module)
    if replaceable:
        materialize.allocate(module, replace_all=assign)
    kwargs.update(_name_map_kwargs(name_map))
    ranks = tensor_parallel.Ranks(tp_rank, tp_size, tp_group)
    def make_loader(choice):  # choice: (name, kwargs) another rank detected for `path`, or None
        return make_path_loader(path, loader, kwargs, choice)

    with ranks.agreement("opening the checkpoint") as opened:
        instance, weights = tensor_parallel.open_weights(make_loader, str(path), ranks)
        opened.checkpoint = tensor_parallel.fingerprint(weights)  # ranks that opened different ones: RanksDisagree
    with ranks.agreement("loading"):
        if isinstance(instance, CoreWeightLoader):
            shards = _rank_shards(module, instance, weights, ranks, shard_dims, fused)
            if replaceable and _fills_by_default(instance):
                shards["assign"] = True  # zero_copy=True may then install views of the file
            report = instance.load_weights(module, weights, strict=strict, progress=progress, **shards)
        elif ranks.size > 1:
            raise _from_core("InvalidArgument", f"tensor-parallel loading (tp_size={ranks.size}) needs a registry loader, "
                             f"not {type(instance).__name__}", "", "", False)
        else:
            report = instance.load_weights(module, weights)
    if report is None:
        return IncompatibleKeys([], [])
    if isinstance(report, LoadReport):  # the library's: its added attributes are items too
        report.tp_rank, report.tp_size = ranks.rank, ranks.size
    elif isinstance(report, dict):  # a Python loader's
        report["tp_rank"], report["tp_size"] = ranks.rank, ranks.size
    out = IncompatibleKeys(list(report["missing"]), list(report["unexpected"]))
    out._report = report
    if isinstance(weights, Weights):
        from .refresh import recorded_digests  # noqa: PLC0415 - refresh imports this module
        module._wl_loaded_digests = recorded_digests(weights._source)  # what refresh() compares with
    return out


def make_path_loader(path, loader, kwargs, choice=None):
    """(loader instance, (name, kwargs) detected or None) for reading `path`: `loader` a registered
    name, "auto" (by content; `choice` what another rank detected), a class or an instance."""
    if isinstance(loader, BaseWeightLoader):
        return loader, None
    name, chosen, detected = loader, kwargs, None
    if name == "auto":
        detected = choice or _core.detect_loader(str(path))
        name, chosen = detected[0], {**detected[1], **kwargs}
    cls = WeightLoaderRegistry.get(name) if isinstance(name, str) else name
    return cls(**chosen), detected


def _fills_by_default(instance):
    """True when the loader keeps the library's load_weights (which takes shards and assign)."""
    return type(instance).load_weights is BaseWeightLoader.load_weights


def _rank_shards(module, instance, weights, ranks, shard_dims, fused):
    """{"shards": ...} for load_weights when some parameter takes slices or parts, else {}."""
    shards = tensor_parallel.plan_module_shards(instance, weights, module_tensors(module), ranks.rank, ranks.size,
                                                shard_dims, fused)
    if not shards:
        return {}
    if not _fills_by_default(instance):
        raise _from_core("InvalidArgument", f"{type(instance).__name__} overrides load_weights, so it cannot fill "
                         f"parameters from slices (tensor-parallel or fused: {', '.join(sorted(shards))})", "", "", False)
    return {"shards": shards}
