"""safetensors.numpy over weightloader: save / save_file / load / load_file of NumPy arrays."""
import sys

import numpy as np

from ._open import deserialize, safe_open
from ._serialize import TensorSpec, save_specs, serialize, serialize_file  # noqa: F401  (the reference module has them too)

# safetensors code to NumPy dtype (NumPy has no BF16 nor float8)
_TYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "U64": np.uint64,
          "I32": np.int32, "U32": np.uint32, "I16": np.int16, "U16": np.uint16, "I8": np.int8, "U8": np.uint8,
          "BOOL": bool, "C64": np.complex64}


def _getdtype(dtype_str):
    """The NumPy dtype of a safetensors code; KeyError when NumPy has none."""
    return _TYPES[dtype_str]


def _specs(tensor_dict):
    """({name: TensorSpec}, the arrays whose memory they point at): little-endian, C-contiguous."""
    specs, owners = {}, []
    for name, a in tensor_dict.items():
        a = np.asarray(a)
        if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
            a = a.astype(a.dtype.newbyteorder("<"))
        if not a.flags.c_contiguous:
            a = a.copy(order="C")  # not np.ascontiguousarray: it makes a 0-d array 1-d
        owners.append(a)
        specs[name] = TensorSpec(dtype=a.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
    return specs, owners


def save(tensor_dict, metadata=None):
    """The safetensors bytes of a dict of arrays."""
    return save_specs(_specs(tensor_dict), metadata)


def save_file(tensor_dict, filename, metadata=None):
    """Writes a dict of arrays as a safetensors file."""
    save_specs(_specs(tensor_dict), metadata, filename)


def load(data):
    """Every tensor of a safetensors file given as bytes, as arrays of their own memory."""
    return {name: np.frombuffer(t["data"], dtype=_getdtype(t["dtype"])).reshape(t["shape"])
            for name, t in deserialize(data)}


def load_file(filename, *, backend="mmap"):
    """Every tensor of a checkpoint as NumPy arrays, by name (in the order of their data)."""
    with safe_open(filename, framework="np", backend=backend) as f:
        return f.get_tensors()


__all__ = ["save", "save_file", "load", "load_file"]
