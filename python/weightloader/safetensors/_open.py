"""safe_open, _safe_open_handle and deserialize with safetensors' signatures, errors and results,
over weightloader's reader (weightloader/safe_open.py): every format weightloader reads, zero-copy
views of a private mapping where the bytes allow."""
import builtins
import ctypes
import os
import re

import numpy as np
import torch

from .. import _core
from ..errors import Error
from ..safe_open import _normalise_index, _open_reader, _open_source, _recognised, _State
from . import _c64, _index
from ._error import SafetensorError, raised_as_safetensors

_FRAMEWORKS = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np"}
_OTHER_FRAMEWORKS = {"tf", "tensorflow", "jax", "flax", "mlx", "paddle"}
_DEVICE = re.compile(r"(cpu|mps)|(cuda|musa|npu|xpu|xla|mlu|hpu)(:[0-9]+)?|mps:0")
_BACKENDS = ("mmap", "pread")


def _framework(framework):
    if framework in _FRAMEWORKS:
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


class safe_open:  # noqa: N801  (safetensors' spelling)
    """safe_open(filename, framework, device="cpu", *, backend="mmap"): a checkpoint read tensor by
    tensor, as safetensors.safe_open; any format weightloader reads. framework: "pt" or "np"/"numpy";
    backend "pread" reads every tensor through the library instead of viewing a mapping."""

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
                                                       opener=_c64.with_c64(_open_source))
        # safetensors' own slicer for NumPy and pread; torch's indexing of a view for torch over a mapping
        self._strict = fw == "np" or backend == "pread"

    def _live(self):
        if self._state is None:
            raise SafetensorError("File is closed")
        return self._state

    def _info(self, name):
        state = self._live()
        if not isinstance(name, str) or name not in state.source:
            raise SafetensorError(f"File does not contain tensor {name}")
        return state.info(name)

    def __enter__(self):
        return self

    def __exit__(self, _exc_type, _exc_value, _traceback):
        self._state = None

    def metadata(self):
        """The header's __metadata__ (str to str), or None."""
        self._live()
        return dict(self._metadata) if self._metadata is not None else None

    def keys(self):
        """The tensor names, sorted."""
        return sorted(self._live().names)

    def offset_keys(self):
        """The tensor names in the order of their data in the file."""
        state = self._live()
        files, order = {}, []
        for name in state.names:
            info = state.info(name)
            order.append((files.setdefault(info["file"], len(files)), info["offset"], name))
        return [name for _, _, name in sorted(order)]

    def get_tensor(self, name):
        """The whole tensor, in the framework and on the device asked for."""
        self._info(name)
        with raised_as_safetensors():
            return self._state.tensor(name)

    def get_tensors(self):
        """Every tensor, by name, in the order of offset_keys()."""
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name):
        """An object with get_shape(), get_dtype() and [index] that reads only what the index selects."""
        return _SafeSlice(self._live(), name, self._info(name), self._strict)


class _safe_open_handle(safe_open):  # noqa: N801
    """safe_open over an open file object (one with fileno() and a name): the file it names."""

    def __init__(self, f, framework, device="cpu", *, backend="mmap"):
        f.fileno  # noqa: B018  (safetensors asks for a real file: AttributeError otherwise)
        super().__init__(f.name, framework, device, backend=backend)


class _SafeSlice:
    """A tensor not read yet: get_shape(), get_dtype() and indexing."""

    def __init__(self, state, name, info, strict):
        self._state, self._name, self._info, self._strict = state, name, info, strict

    def get_shape(self):
        return list(self._info["shape"])

    def get_dtype(self):
        return self._info["dtype"]

    def __getitem__(self, index):
        state, name, dtype = self._state, self._name, self._info["dtype"]
        if self._strict:
            ranges = _index.ranges(index, self._info["shape"])
        else:
            try:
                ranges = _normalise_index(index, self._info["shape"])
            except (Error, TypeError):  # steps, lists, None, tensors: torch indexes the whole tensor
                with raised_as_safetensors():
                    return state.tensor(name)[index]
        with raised_as_safetensors():
            return state.read_ranges(name, dtype, ranges)


def deserialize(bytes):  # noqa: A002  (safetensors' parameter name)
    """[(name, {"shape": [...], "dtype": "F32", "data": bytearray})] of a whole file given as bytes,
    in the order of the data. F4 comes as its packed bytes (dtype "F4", the logical shape); F6_* decoded
    to F32 (no framework has a type for them)."""
    with raised_as_safetensors("Error while deserializing: "):
        data = bytes if isinstance(bytes, builtins.bytes) else builtins.bytes(bytes)
        source = _recognised(_c64.with_c64(_core.from_bytes), "<bytes>", data)
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
