"""refresh(module, newer): a live module brought up to a newer checkpoint by reading only the
tensors whose bytes changed, found by comparing the per-tensor sha256 digests the writer recorded
(save_file(..., tensor_digests=True)) in the two checkpoints' headers."""
from . import _core
from .errors import InvalidArgumentError
from .load_into import make_path_loader
from .loaders import LoadReport, Weights


class RefreshReport(LoadReport):
    """The load of the changed tensors (bytes_read, seconds, loaded, ...) with `changed` (their
    names), `unchanged` (how many were left as they are) and `unrecorded` (tensors no digest
    describes on one side: read, since nothing says they are the same)."""


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
    old_source = getattr(module, "_wl_loaded_from", None)
    if since is not None:
        old_source = make_path_loader(since, loader, kwargs)[0].get_weights(str(since))._source
    if old_source is None:
        raise InvalidArgumentError("refresh: this module was not loaded by weightloader.load_into; name the checkpoint "
                                   "it holds with since=", "InvalidArgument")
    changed, unrecorded = changed_tensors(weights._source, old_source)
    report = {"loaded": [], "bytes_read": 0, "seconds": 0.0, "missing": [], "unexpected": []}
    if changed:
        report = instance.load_weights(module, Weights(weights._source.only(changed), weights._dtype), strict=False,
                                       progress=progress)
    module._wl_loaded_from = weights._source
    return refresh_report(report, changed, len(weights._source), unrecorded)


def changed_tensors(new_source, old_source):
    """(the tensors of new_source to read, those of them no digest describes on one side): the ones
    whose recorded sha256 differs from old_source's, and the unrecorded ones."""
    new, old = _core.recorded_tensor_digests(new_source), _core.recorded_tensor_digests(old_source)
    names = new_source.keys()
    unrecorded = [n for n in names if n not in new or n not in old]
    return [n for n in names if n in unrecorded or new[n] != old[n]], unrecorded


def refresh_report(report, changed, total, unrecorded):
    out = RefreshReport(report)
    out.update(changed=changed, unchanged=total - len(changed), unrecorded=unrecorded)
    return out
