"""safe_open, _safe_open_handle and deserialize with safetensors' signatures, errors and results,
over weightloader's reader (weightloader/safe_open.py): every format weightloader reads, zero-copy
views of a private mapping where the bytes allow."""
import builtins
import ctypes
import os
import re

import numpy as np
import torch

from ..errors import Error
from ..safe_open import _FRAMEWORKS, _normalise_index, _open_reader, _recognised, _State
from ..safe_open import safe_open as _weightloader_safe_open
from . import _c64, _index
from ._error import SafetensorError, raised_as_safetensors

_OTHER_FRAMEWORKS = {"tf", "tensorflow", "jax", "flax", "mlx", "paddle"}
_DEVICE = re.compile(r"(cpu|mps)|(cuda|musa|npu|xpu|xla|mlu|hpu)(:[0-9]+)?|mps:0")
_BACKENDS = ("mmap", "pread")


def _framework(framework):
    """safetensors' names, exactly (weightloader's safe_open also takes other cases)."""
    if isinstance(framework, str) and framework in _FRAMEWORKS:
        return _FRAMEWORKS[framework]
    if framework in _OTHER_FRAMEWORKS:
        raise SafetensorError(f"framework {framework} is not supported by weightloader.safetensors: use pt or numpy")
    raise SafetensorError(f"framework {framework} is invalid")


def _device(device, framework):
    """The device as torch takes it; safetensors' names and accelerator numbers."""
    if device is None:
        device = "cpu"
    if framework == "np" and str(device) != "cpu":
        raise SafetensorError(f"Device {device} is not supported for framework numpy")
    if isinstance(device, str):
        if not _DEVICE.fullmatch(device):
            raise SafetensorError(f"device {device} is invalid")
    elif isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        device = torch.device("cuda", device)  # safetensors leaves an accelerator number to torch: CUDA here
    elif not isinstance(device, torch.device):
        raise SafetensorError(f"device {device!r} is invalid")
    return device


def _view_index(index, shape):
    """torch's indexing of a view (what safetensors does for torch over a mapping): the ranges of
    ints and start:stop slices, None (index the whole tensor) for steps, lists, None, tensors."""
    try:
        return _normalise_index(index, shape)
    except (Error, TypeError):
        return None


class safe_open(_weightloader_safe_open):  # noqa: N801  (safetensors' spelling)
    """safe_open(filename, framework, device="cpu", *, backend="mmap"): a checkpoint read tensor by
    tensor, as safetensors.safe_open; any format weightloader reads. framework: "pt" or "np"/"numpy";
    backend "pread" reads every tensor through the library instead of viewing a mapping. weightloader's
    safe_open with safetensors' argument rules, its errors (SafetensorError) and its slicer."""

    def __init__(self, filename, framework, device="cpu", *, backend="mmap"):
        fw = _framework(framework)
        dev = _device(device, fw)
        if backend not in _BACKENDS:
            raise SafetensorError(f"backend {backend!r} is invalid (expected one of: \"mmap\", \"pread\")")
        path = os.fspath(filename)
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such file or directory: {path}")
        with raised_as_safetensors("Error while deserializing header: "):
            self._state, self._metadata = _open_reader(path, fw, dev, mappable=backend == "mmap",
                                                       opener=_c64.open_path)
        if fw == "np" or backend == "pread":  # safetensors' own slicer; torch's indexing of a view otherwise
            self._index_rule = _index.ranges
        else:
            self._index_rule = _view_index

    def _errors(self):
        return raised_as_safetensors()

    def _closed(self):
        return SafetensorError("File is closed")

    def _no_tensor(self, name):
        return SafetensorError(f"File does not contain tensor {name}")


class _safe_open_handle(safe_open):  # noqa: N801
    """safe_open over an open file object (one with fileno() and a name): the file it names."""

    def __init__(self, f, framework, device="cpu", *, backend="mmap"):
        f.fileno  # noqa: B018  (safetensors asks for a real file: AttributeError otherwise)
        super().__init__(f.name, framework, device, backend=backend)


def deserialize(bytes):  # noqa: A002  (safetensors' parameter name)
    """[(name, {"shape": [...], "dtype": "F32", "data": bytearray})] of a whole file given as bytes,
    in the order of the data. F4 comes as its packed bytes (dtype "F4", the logical shape); F6_* decoded
    to F32 (no framework has a type for them)."""
    with raised_as_safetensors("Error while deserializing: "):
        data = bytes if isinstance(bytes, builtins.bytes) else builtins.bytes(bytes)
        source = _recognised(_c64.open_bytes, "<bytes>", data)
        state = _State(source, "np", None, None, mappable=False)
        out = []
        for name in sorted(state.names, key=lambda n: state.info(n)["offset"]):
            info = state.info(name)
            if info["stored_type"] == "F4":  # its packed bytes, as safetensors gives them (torch has float4_e2m1fn_x2)
                buffer = bytearray(info["nbytes"])
                if buffer:
                    source.read_stored_into(name, ctypes.addressof(ctypes.c_char.from_buffer(buffer)), len(buffer))
                out.append((name, {"shape": list(info["shape"]), "dtype": "F4", "data": buffer}))
                continue
            count = int(np.prod(info["shape"], dtype=np.uint64))
            buffer = bytearray(count * _c64.itemsize(info["dtype"]))
            if buffer:
                source.read_into(name, info["dtype"], ctypes.addressof(ctypes.c_char.from_buffer(buffer)), len(buffer))
            out.append((name, {"shape": list(info["shape"]), "dtype": info["dtype"], "data": buffer}))
        return out
