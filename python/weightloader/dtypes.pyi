"""dtype spellings: torch dtypes, NumPy dtypes and strings ("bf16", "bfloat16", "F32") to the
library's names, and back to torch."""
from typing import Any, Union

import numpy as np
import torch

# What a dtype= argument accepts: torch.float32, np.float16, np.dtype("int8"), "bf16", "F32", ...
_DTypeLike = Union[str, torch.dtype, np.dtype[Any], type]

def name_of(dtype: _DTypeLike) -> str:
    """The library's name ("BF16") for a torch dtype, NumPy dtype or string; ValueError otherwise."""

def to_torch(name: str) -> torch.dtype:
    """The torch dtype of a library dtype name ("BF16" -> torch.bfloat16); TypeError if torch has none."""

def to_numpy(name: str) -> np.dtype[Any]:
    """The NumPy dtype of a library dtype name ("F32" -> float32); TypeError if NumPy has none."""
