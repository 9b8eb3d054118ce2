"""refresh(module, newer): a live module brought up to a newer checkpoint by reading only the
tensors whose bytes changed, found by comparing the per-tensor sha256 digests the writer recorded
(save_file(..., tensor_digests=True)) in the two checkpoints' headers."""
from . import _core
from .errors import InvalidArgumentError
from .load_into import make_path_loader
from .loaders import Weights

DIGESTS_KEY = "weightloader.tensor_sha256"  # the writer's __metadata__ key (kTensorDigestsKey)


class RefreshReport(dict):
    """The load of the changed tensors (bytes_read, seconds, loaded, ...: the LoadReport's items, or
    those the ranks' reports add up to) with `changed` (their names), `unchanged` (how many were left
    as they are) and `unrecorded` (tensors no digest describes on one side: read, since nothing says
    they are the same); items, also attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def refresh(module, newer, since=None, loader="auto", progress=None, **kwargs):
    """Writes into `module`'s parameters, in place, the tensors of the checkpoint `newer` whose
    bytes differ from those of the checkpoint it was loaded from (load_into or an earlier refresh
    remembers it; `since` names it otherwise), and reads nothing else. Digests come from the
    checkpoints' headers; a tensor without one on either side is read. kwargs go to the loader
    (strip_prefix, dtype conversions happen as in load_into). Returns a RefreshReport."""
    instance, _ = make_path_loader(newer, loader, kwargs)
    weights = instance.get_weights(str(newer))
    if not isinstance(weights, Weights):
        raise InvalidArgumentError(f"refresh needs a registry loader (safetensors files), not {type(instance).__name__}",
                                   "InvalidArgument")
    held = getattr(module, "_wl_loaded_digests", None)
    if since is not None:
        held = recorded_digests(make_path_loader(since, loader, kwargs)[0].get_weights(str(since))._source)
    if held is None:
        raise InvalidArgumentError("refresh: this module was not loaded by weightloader.load_into; name the checkpoint "
                                   "it holds with since=", "InvalidArgument")
    new = recorded_digests(weights._source)
    changed, unrecorded = changed_tensors(weights._source.keys(), new, held)
    report = {"loaded": [], "bytes_read": 0, "seconds": 0.0, "missing": [], "unexpected": []}
    if changed:
        report = instance.load_weights(module, Weights(weights._source.only(changed), weights._dtype), strict=False,
                                       progress=progress)
    module._wl_loaded_digests = new
    return refresh_report(report, changed, len(weights._source), unrecorded)


def recorded_digests(source):
    """{tensor: sha256} the writer recorded in the checkpoint's headers; {} without reading when its
    metadata says it recorded none. Kept instead of the source, which would hold its files open."""
    return _core.recorded_tensor_digests(source) if DIGESTS_KEY in source.metadata() else {}


def changed_tensors(names, new, held):
    """(the tensors of `names` to read, those of them no digest describes on one side): the ones
    whose digest in `new` differs from `held`'s, and the unrecorded ones."""
    unrecorded = [n for n in names if n not in new or n not in held]
    return [n for n in names if n in unrecorded or new[n] != held[n]], unrecorded


def refresh_report(report, changed, total, unrecorded):
    out = RefreshReport(report)
    out.update(changed=changed, unchanged=total - len(changed), unrecorded=unrecorded)
    return out
