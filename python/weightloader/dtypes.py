"""dtype spellings: torch dtypes, NumPy dtypes and strings ("bf16", "bfloat16", "F32") to the
library's names, and back to torch."""
import numpy as np
import torch

from .errors import InvalidArgumentError

_TORCH = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
          torch.int8: "I8", torch.int16: "I16", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8",
          torch.uint16: "U16", torch.uint32: "U32", torch.uint64: "U64", torch.bool: "BOOL",
          torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2"}
_TO_TORCH = {v: k for k, v in _TORCH.items()}
_NUMPY = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
          np.dtype(np.int8): "I8", np.dtype(np.int16): "I16", np.dtype(np.int32): "I32", np.dtype(np.int64): "I64",
          np.dtype(np.uint8): "U8", np.dtype(np.uint16): "U16", np.dtype(np.uint32): "U32",
          np.dtype(np.uint64): "U64", np.dtype(np.bool_): "BOOL"}
_TO_NUMPY = {v: k for k, v in _NUMPY.items()}
_ALIASES = {"float32": "F32", "fp32": "F32", "f32": "F32", "float": "F32", "float16": "F16", "fp16": "F16",
            "f16": "F16", "half": "F16", "bfloat16": "BF16", "bf16": "BF16", "float64": "F64", "f64": "F64",
            "double": "F64", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64", "uint8": "U8",
            "uint16": "U16", "uint32": "U32", "uint64": "U64", "bool": "BOOL", "f8_e4m3": "F8_E4M3",
            "f8_e5m2": "F8_E5M2", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
_NAMES = set(_ALIASES.values())


def name_of(dtype):
    """The library's name ("BF16") for a torch dtype, NumPy dtype or string; ValueError otherwise."""
    if isinstance(dtype, torch.dtype):
        if dtype in _TORCH:
            return _TORCH[dtype]
        raise InvalidArgumentError(f"torch dtype {dtype} is not supported", "UnsupportedDType")
    if isinstance(dtype, str):
        if dtype.upper() in _NAMES:
            return dtype.upper()
        if dtype.lower() in _ALIASES:
            return _ALIASES[dtype.lower()]
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
