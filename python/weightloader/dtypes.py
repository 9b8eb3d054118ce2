"""dtype spellings: torch dtypes, NumPy dtypes and strings ("bf16", "bfloat16", "F32") to the
library's names, and back to torch."""
import numpy as np
import torch

from . import _core
from .errors import InvalidArgumentError

_TORCH = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
          torch.int8: "I8", torch.int16: "I16", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8",
          torch.uint16: "U16", torch.uint32: "U32", torch.uint64: "U64", torch.bool: "BOOL",
          torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2", torch.float8_e8m0fnu: "F8_E8M0"}
_TO_TORCH = {v: k for k, v in _TORCH.items()}
_NUMPY = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
          np.dtype(np.int8): "I8", np.dtype(np.int16): "I16", np.dtype(np.int32): "I32", np.dtype(np.int64): "I64",
          np.dtype(np.uint8): "U8", np.dtype(np.uint16): "U16", np.dtype(np.uint32): "U32",
          np.dtype(np.uint64): "U64", np.dtype(np.bool_): "BOOL"}
_TO_NUMPY = {v: k for k, v in _NUMPY.items()}


def name_of(dtype):
    """The library's name ("BF16") for a torch dtype, NumPy dtype or string; ValueError otherwise."""
    if isinstance(dtype, torch.dtype):
        if dtype in _TORCH:
            return _TORCH[dtype]
        raise InvalidArgumentError(f"torch dtype {dtype} is not supported", "UnsupportedDType")
    if isinstance(dtype, str):
        name = _core.dtype_name(dtype)  # the C++ table of names and spellings
        if name is not None:
            return name
        raise InvalidArgumentError(f"unknown dtype '{dtype}' (e.g. 'bf16', 'float32', torch.bfloat16)", "UnsupportedDType")
    try:
        return _NUMPY[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise InvalidArgumentError(f"dtype {dtype!r} is not supported", "UnsupportedDType") from None


def to_torch(name):
    if name not in _TO_TORCH:
        raise TypeError(f"torch {torch.__version__} has no dtype for {name}; read it with dtype= a wider type")
    return _TO_TORCH[name]


def to_numpy(name):
    if name not in _TO_NUMPY:
        raise TypeError(f"NumPy has no dtype for {name}: open with framework=\"pt\", or pass dtype= (e.g. \"f32\")")
    return _TO_NUMPY[name]
