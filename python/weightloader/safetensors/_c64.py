"""safetensors' C64 (complex64), which the C++ library has no type for (adding one would reach its
conversion tables): the library refuses a file holding C64 tensors once the header has passed
every other rule, so such a file is catalogued here from that validated header and its tensors read
by the library from a private mapping, each C64 tensor as F32 with a last dimension of 2 (the same
bytes). Everything else about the reader (zero-copy views, slices, devices) is safe_open.py's."""
import ctypes
import io
import mmap
import os

from .. import _core
from ..errors import InvalidArgumentError
from ..safe_open import _SIZES, _safetensors_header


def _c64_only(err):
    """Whether err is the library refusing a dtype that safetensors knows (it says so for the first such tensor)."""
    return isinstance(err, InvalidArgumentError) and err.code == "UnsupportedDType" and "valid safetensors" in str(err)


def with_c64(opener):
    """opener(label, ...) with a file or bytes the library refused for C64 opened here instead."""
    def open_(*args):
        try:
            return opener(*args)
        except InvalidArgumentError as err:
            if not _c64_only(err) or (len(args) == 1 and not os.path.isfile(args[0])):
                raise
            if len(args) == 1:  # a path
                with open(args[0], "rb") as f:
                    buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
                file = args[0]
            else:  # (label, bytes)
                buffer, file = bytearray(args[1]), None
            header, start = _safetensors_header(io.BytesIO(buffer[:8 + int.from_bytes(buffer[:8], "little")]))
            if {v["dtype"] for k, v in header.items() if k != "__metadata__"} - set(_SIZES):
                raise  # another dtype the library lacks (F4, F8_E8M0, ...): its error stands
            return C64Source(args[0], header, start, buffer, file)
    return open_


class C64Source:
    """A Source (as weightloader._core gives) over a safetensors file or bytes that hold C64 tensors."""

    format = "safetensors"

    def __init__(self, label, header, start, buffer, file):
        self.origin = label
        self._metadata = header.get("__metadata__") or {}
        base = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
        self._infos, entries = {}, []
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            complex_ = entry["dtype"] == "C64"
            self._infos[name] = {"name": name, "dtype": entry["dtype"], "shape": list(entry["shape"]),
                                 "stored_type": entry["dtype"], "file": file or label, "offset": start + begin,
                                 "nbytes": end - begin, "raw": file is not None}
            entries.append((name, "F32" if complex_ else entry["dtype"],
                            list(entry["shape"]) + [2] if complex_ else list(entry["shape"]), None,
                            base + start + begin, buffer))
        self._memory = _core.from_memory(label, entries, self._metadata)

    def keys(self):
        return list(self._infos)

    def __len__(self):
        return len(self._infos)

    def __contains__(self, name):
        return name in self._infos

    def info(self, name):
        return dict(self._infos[name])

    def metadata(self):
        return dict(self._metadata)

    def read_into(self, name, dtype, ptr, nbytes, slice=None, device="cpu"):  # noqa: A002  (the Source API)
        if self._infos[name]["dtype"] == "C64":
            if dtype != "C64":
                raise InvalidArgumentError(f"{self.origin}: tensor '{name}': C64 cannot be converted to {dtype} "
                                           "[UnsupportedDType]", "UnsupportedDType", self.origin, name)
            dtype = "F32"  # the same bytes; a slice's dimensions are the leading ones
        self._memory.read_into(name, dtype, ptr, nbytes, slice, device=device)
