"""safetensors.torch over weightloader: save / save_file / load / load_file of torch tensors,
save_model / load_model for models whose parameters share memory (tied weights), and the helpers
that find such sharing (_find_shared_tensors, _remove_duplicate_names, storage_ptr, storage_size)."""
from collections import defaultdict

import torch

from ..safe_open import _FLOAT4, _float4_shape
from ._error import SafetensorError, raised_as_safetensors
from ._open import deserialize, safe_open
from ._serialize import TensorSpec, save_specs, serialize, serialize_file  # noqa: F401  (the reference module has them too)

_SIZE = {t: torch.empty((), dtype=t).element_size() for t in (
    torch.int64, torch.float32, torch.int32, torch.bfloat16, torch.float16, torch.int16, torch.uint8, torch.int8,
    torch.bool, torch.float64, torch.complex64, torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn,
    torch.float8_e5m2, *(getattr(torch, n) for n in ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
                         if hasattr(torch, n)))}

# safetensors code to torch dtype, for the dtypes this torch has
_TYPES = {code: getattr(torch, name) for code, name in (
    ("F64", "float64"), ("F32", "float32"), ("F16", "float16"), ("BF16", "bfloat16"), ("I64", "int64"),
    ("I32", "int32"), ("I16", "int16"), ("I8", "int8"), ("U8", "uint8"), ("BOOL", "bool"), ("C64", "complex64"),
    ("U64", "uint64"), ("U32", "uint32"), ("U16", "uint16"), ("F8_E4M3", "float8_e4m3fn"),
    ("F8_E4M3FNUZ", "float8_e4m3fnuz"), ("F8_E5M2", "float8_e5m2"), ("F8_E5M2FNUZ", "float8_e5m2fnuz"),
    ("F8_E8M0", "float8_e8m0fnu"))
    if hasattr(torch, name)}


def _getdtype(dtype_str):
    """The torch dtype of a safetensors code; KeyError when this torch has none."""
    return _TYPES[dtype_str]


def _storage(tensor):
    return tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()  # torch < 2.0


def storage_ptr(tensor):
    """The address of the storage under tensor (0 for a meta tensor)."""
    try:
        return _storage(tensor).data_ptr()
    except NotImplementedError:  # meta storage
        return 0


def storage_size(tensor):
    """The bytes of the storage under tensor."""
    try:
        return _storage(tensor).nbytes()
    except NotImplementedError:  # meta storage: only the tensor itself
        return tensor.nelement() * _SIZE[tensor.dtype]


def _end_ptr(tensor):
    """One past the last byte tensor covers."""
    if not tensor.nelement():
        return tensor.data_ptr()
    return tensor.view(-1)[-1].data_ptr() + _SIZE[tensor.dtype]


def _filter_shared_not_shared(tensors, state_dict):
    """Splits each group of names on one storage into groups whose byte ranges overlap, sweeping the
    ranges by start as safetensors does (each compared with the one before it)."""
    out = []
    for shared in tensors:
        if len(shared) < 2:
            out.append(shared)
            continue
        areas = sorted((state_dict[n].data_ptr(), _end_ptr(state_dict[n]), n) for n in shared)
        last_stop = None
        for start, stop, name in areas:
            if last_stop is None or start >= last_stop:
                out.append({name})
            else:
                out[-1].add(name)
            last_stop = stop
    return out


def _find_shared_tensors(state_dict):
    """[set of names] that share memory (one set per group; names alone in theirs too); meta tensors
    and empty storages share nothing."""
    groups = defaultdict(set)
    for name, t in state_dict.items():
        if t.device != torch.device("meta") and storage_ptr(t) != 0 and storage_size(t) != 0:
            groups[(t.device, storage_ptr(t), storage_size(t))].add(name)  # the device: pointers repeat across GPUs
    return _filter_shared_not_shared(sorted(groups.values()), state_dict)


def _is_complete(tensor):
    """Whether tensor covers its whole storage, exactly."""
    return tensor.data_ptr() == storage_ptr(tensor) and \
        tensor.nelement() * _SIZE[tensor.dtype] == storage_size(tensor)


def _remove_duplicate_names(state_dict, *, preferred_names=None, discard_names=None):
    """{name kept: [names dropped]} for every group of names sharing memory: the kept one covers the
    whole storage, is in preferred_names if one is, else not in discard_names if one is not, else the
    first by name. RuntimeError when no name of a group covers its storage."""
    preferred_names, discard_names = set(preferred_names or ()), set(discard_names or ())
    to_remove = defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        complete = {n for n in shared if _is_complete(state_dict[n])}
        if not complete:
            raise RuntimeError(
                f"Error while trying to find names to remove to save state dict, but found no suitable name to keep "
                f"for saving amongst: {shared}. None of them covers the whole storage, so saving any would store "
                f"more memory than the tensors hold; refusing to save/load the model. See "
                f"https://huggingface.co/docs/safetensors/torch_shared_tensors")
        keep = min(complete)
        if complete - discard_names:
            keep = min(complete - discard_names)
        if preferred_names & complete:
            keep = min(preferred_names & complete)
        to_remove[keep].extend(n for n in sorted(shared) if n != keep)
    return to_remove


def _check_for_save(tensors):
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(t)}")
    sparse = [name for name, t in tensors.items() if t.layout != torch.strided]
    if sparse:
        raise ValueError(f"You are trying to save a sparse tensors: `{sparse}` which this library does not support."
                         " You can make it a dense tensor before saving with `.to_dense()` but be aware this might"
                         " make a much larger file than needed.")
    shared = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences when "
            f"loading them again: {shared}. A potential way to correctly save your model is to use `save_model`. "
            f"More information at https://huggingface.co/docs/safetensors/torch_shared_tensors")
    for name, t in tensors.items():  # after the layout check: sparse tensors have no is_contiguous
        if not t.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. Either "
                             "the tensors are views of one another (save only the whole ones and slice again after "
                             "loading), or call `.contiguous()` on it before saving.")


def _specs(tensors):
    """({name: TensorSpec}, the CPU tensors whose memory the specs point at)."""
    _check_for_save(tensors)
    specs, owners = {}, []
    for name, t in tensors.items():
        t = t.detach().to("cpu")  # a meta tensor raises here: it has no bytes
        owners.append(t)
        specs[name] = TensorSpec(dtype=str(t.dtype).split(".")[-1], shape=list(t.shape), data_ptr=t.data_ptr(),
                                 data_len=t.nbytes)  # every dtype TensorSpec takes, float4_e2m1fn_x2 too
    return specs, owners


def save(tensors, metadata=None):
    """The safetensors bytes of a dict of contiguous, dense tensors that share no memory."""
    return save_specs(_specs(tensors), metadata)


def save_file(tensors, filename, metadata=None):
    """Writes a dict of contiguous, dense tensors that share no memory as a safetensors file."""
    save_specs(_specs(tensors), metadata, filename)


def load_file(filename, device="cpu", *, backend="mmap"):
    """Every tensor of a checkpoint, by name (in the order of their data), on device."""
    with safe_open(filename, framework="pt", device=device, backend=backend) as f:
        return f.get_tensors()


def _float4(name, t):
    if _FLOAT4 is None:
        raise SafetensorError(f"tensor '{name}': F4 needs torch.float4_e2m1fn_x2, which this torch lacks")
    with raised_as_safetensors("Error while deserializing: "):
        shape = _float4_shape(t["shape"], "<bytes>", name)
    packed = torch.frombuffer(t["data"], dtype=torch.uint8) if t["data"] else torch.empty(0, dtype=torch.uint8)
    return packed.reshape(shape).view(_FLOAT4)


def load(data):
    """Every tensor of a safetensors file given as bytes, as CPU tensors of their own memory."""
    out = {}
    for name, t in deserialize(data):
        if t["dtype"] == "F4":  # two codes a byte: torch's float4_e2m1fn_x2 with the last dimension halved
            out[name] = _float4(name, t)
            continue
        dtype = _getdtype(t["dtype"])
        out[name] = torch.frombuffer(t["data"], dtype=dtype).reshape(t["shape"]) if t["data"] else \
            torch.empty(t["shape"], dtype=dtype)  # frombuffer refuses an empty buffer
    return out


def save_model(model, filename, metadata=None, force_contiguous=True):
    """Saves model.state_dict() with every group of tied tensors stored once: each dropped name is
    recorded in the metadata as {dropped: kept} (unless metadata names it already)."""
    state_dict = model.state_dict()
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as err:
        raise ValueError(f"{err} Or use save_model(..., force_contiguous=True), read the docs for potential "
                         "caveats.") from err


def load_model(model, filename, strict=True, device="cpu", *, backend="mmap"):
    """Loads a file saved by save_model (or save_file) into model, tied tensors through the name kept.
    Returns (missing, unexpected) names; with strict, a RuntimeError when either is non-empty."""
    state_dict = load_file(filename, device=device, backend=backend)
    tied = _remove_duplicate_names(model.state_dict(), preferred_names=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for name in (n for dropped in tied.values() for n in dropped):
        if name in missing:
            missing.remove(name)  # filled through the tensor it is tied to
        else:
            unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected


__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model", "storage_ptr", "storage_size"]
