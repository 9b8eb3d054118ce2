"""TensorSpec, serialize and serialize_file: safetensors bytes from raw memory, laid out as the
format specifies (8-byte little-endian header length, compact JSON header padded with spaces to a
multiple of 8, then the tensors' bytes, sorted by dtype from the largest, then by name).

Written here rather than by the library's writer because that one cannot store C64 and the other
dtypes safetensors knows and weightloader does not read (TensorSpec takes them all)."""
import ctypes
import json
import os
import uuid
from collections.abc import Mapping

from . import _dtypes
from ._error import SafetensorError

_MAX_HEADER = 100_000_000  # what readers accept


class TensorSpec:
    """One tensor for serialize / serialize_file: its dtype (a framework name such as "float32",
    kept as its safetensors code "F32"), shape, and data_len bytes at address data_ptr, which the
    caller keeps alive until the call returns."""

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype, shape, data_ptr, data_len):
        if not isinstance(dtype, str) or dtype not in _dtypes.CODES:
            raise SafetensorError(f"Unknown dtype {dtype!r}. Supported dtypes: {', '.join(_dtypes.CODES)}")
        code = _dtypes.CODES[dtype]
        shape = [_unsigned(d, "shape") for d in shape]
        if code == "F4" and shape:  # two F4 per byte: torch's shape counts bytes, the header elements
            shape[-1] *= 2
        object.__setattr__(self, "_dtype", code)
        object.__setattr__(self, "_shape", shape)
        object.__setattr__(self, "_data_ptr", _unsigned(data_ptr, "data_ptr"))
        object.__setattr__(self, "_data_len", _unsigned(data_len, "data_len"))

    def __setattr__(self, name, value):
        raise AttributeError("TensorSpec is immutable")

    dtype = property(lambda self: self._dtype, doc="The safetensors code of the dtype (\"F32\").")
    shape = property(lambda self: list(self._shape), doc="The shape the header records (elements).")
    data_ptr = property(lambda self: self._data_ptr, doc="The address of the contiguous bytes.")
    data_len = property(lambda self: self._data_len, doc="How many bytes.")

    def __repr__(self):
        return (f"TensorSpec(dtype='{self._dtype}', shape={self._shape}, data_ptr={self._data_ptr}, "
                f"data_len={self._data_len})")


def _unsigned(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = value.__index__()
        except AttributeError:
            raise TypeError(f"{what} must hold integers, not {type(value).__name__}") from None
    if value < 0:
        raise OverflowError(f"{what} cannot be negative ({value})")
    return value


def _layout(tensor_dict, metadata):
    """(header bytes with their length prefix, the specs in storage order)."""
    if not isinstance(tensor_dict, Mapping):
        raise TypeError(f"tensor_dict must be a dict of str to TensorSpec, not {type(tensor_dict).__name__}")
    for name, spec in tensor_dict.items():
        if not isinstance(name, str) or not isinstance(spec, TensorSpec):
            raise TypeError(f"tensor_dict must map str to TensorSpec; {name!r} maps to a {type(spec).__name__}")
    if metadata is not None and not (isinstance(metadata, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("metadata must be a dict of str to str")
    order = sorted(tensor_dict.items(), key=lambda kv: (-_dtypes.ORDER[kv[1].dtype], kv[0]))
    header = {} if metadata is None else {"__metadata__": dict(sorted(metadata.items()))}
    offset = 0
    for name, spec in order:
        if name == "__metadata__":
            raise SafetensorError("Error while serializing: \"__metadata__\" cannot name a tensor")
        count = 1
        for d in spec.shape:
            count *= d
        bits = count * _dtypes.BITS[spec.dtype]
        if bits % 8 or bits // 8 != spec.data_len:
            raise SafetensorError(f"Error while serializing: tensor {name!r}: {spec.data_len} bytes given for "
                                  f"{spec.dtype} {spec.shape} ({bits / 8:g} bytes)")
        header[name] = {"dtype": spec.dtype, "shape": spec.shape, "data_offsets": [offset, offset + spec.data_len]}
        offset += spec.data_len
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    if len(text) > _MAX_HEADER:
        raise SafetensorError(f"Error while serializing: the header would be {len(text)} bytes, above {_MAX_HEADER}")
    return len(text).to_bytes(8, "little") + text, [spec for _, spec in order]


def _memory(spec):
    """The spec's bytes, without a copy."""
    return memoryview((ctypes.c_char * spec.data_len).from_address(spec.data_ptr)).cast("B")


def serialize(tensor_dict, metadata=None):
    """The safetensors bytes of tensor_dict ({name: TensorSpec}) with optional str metadata."""
    header, specs = _layout(tensor_dict, metadata)
    return b"".join([header, *(_memory(s) for s in specs if s.data_len)])


def serialize_file(tensor_dict, filename, metadata=None):
    """Writes what serialize returns to filename: into a new file beside it, then renamed over it, so
    a mapping of the old file (tensors still loaded from it) keeps its bytes. Each write releases the
    GIL while the bytes go out."""
    header, specs = _layout(tensor_dict, metadata)
    path = os.fspath(filename)
    tmp = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(header)
            for spec in specs:
                if spec.data_len:
                    f.write(_memory(spec))
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise SafetensorError(f"Error while serializing: {err}") from err
        raise


def save_specs(specs_and_owners, metadata=None, filename=None):
    """serialize (filename None: returns the bytes) or serialize_file of ({name: TensorSpec}, the
    objects owning the memory the specs point at), keeping the owners alive until the bytes are copied."""
    specs, owners = specs_and_owners
    out = serialize(specs, metadata=metadata) if filename is None else serialize_file(specs, filename, metadata=metadata)
    del owners
    return out
