"""safetensors' C64 (complex64), which the C++ library has no element type for: its safetensors
reader catalogues complex tensors as pairs of their part when asked (_core.open_safetensors: C64 as
F32 pairs, a last dimension of 2, the same bytes, with the names of those tensors), and this module
shows them as C64. Everything else about the reader (zero-copy views, slices, devices) is
safe_open.py's."""
import os

from .. import _core
from ..errors import InvalidArgumentError
from ..safe_open import _open_source


def itemsize(dtype):
    """Bytes per element of a library dtype, or of C64 (a pair of F32)."""
    return 2 * _core.dtype_size("F32") if dtype == "C64" else _core.dtype_size(dtype)


def _shown(opened):
    """The source of _core.open_safetensors's answer (source, complex tensor names), its complex
    tensors shown as C64; None for content that is not safetensors."""
    if opened is None:
        return None
    source, pairs = opened
    return C64Source(source, pairs) if pairs else source


def open_path(path):
    """The drop-in's catalogue of a path: a safetensors file through the library's reader with its
    complex tensors as pairs; a directory or a file of another format as weightloader.safe_open opens it."""
    source = None if os.path.isdir(path) else _shown(_core.open_safetensors(path))
    return source if source is not None else _open_source(path)


def open_bytes(label, data):
    """The drop-in's catalogue of a whole file given as bytes, as open_path's (found by content)."""
    source = _shown(_core.open_safetensors(label, data))
    return source if source is not None else _core.from_bytes(label, data)


class C64Source:
    """A Source (as weightloader._core gives) over a safetensors file or bytes that hold C64 tensors:
    the library's source, where they are F32 pairs, with those tensors shown and read as C64."""

    def __init__(self, source, pairs):
        self._source, self._pairs = source, frozenset(pairs)
        self.format, self.origin = source.format, source.origin

    def keys(self):
        return self._source.keys()

    def __len__(self):
        return len(self._source)

    def __contains__(self, name):
        return name in self._source

    def info(self, name):
        info = self._source.info(name)
        if name in self._pairs:
            info.update(dtype="C64", shape=info["shape"][:-1], stored_type="C64")
        return info

    def metadata(self):
        return self._source.metadata()

    def stored(self, name, dtype):
        """The dtype to ask the library's source for: F32 pairs for a C64 tensor read as C64."""
        if name not in self._pairs:
            return dtype
        if dtype != "C64":
            raise InvalidArgumentError(f"{self.origin}: tensor '{name}': C64 cannot be converted to {dtype} "
                                       "[UnsupportedDType]", "UnsupportedDType", self.origin, name)
        return "F32"  # the same bytes; a slice's dimensions are the leading ones

    def read_into(self, name, dtype, ptr, nbytes, slice=None, device="cpu"):  # noqa: A002  (the Source API)
        self._source.read_into(name, self.stored(name, dtype), ptr, nbytes, slice, device=device)

    def read_stored_into(self, name, ptr, nbytes):
        self._source.read_stored_into(name, ptr, nbytes)

    def reads_slice(self, name, dim, begin, end):
        return self._source.reads_slice(name, dim, begin, end)  # a C64 tensor's leading dimensions are its pairs'

    def private_views(self):
        return _PairViews(self, _core.PrivateViews(self._source))


class _PairViews:
    """The library's zero-copy views of a C64Source's tensors, a C64 tensor's as its F32 pairs."""

    def __init__(self, source, views):
        self._source, self._views = source, views

    def view(self, name, dtype):
        if self._source.info(name)["dtype"] == "C64" and dtype != "C64":
            return None  # a conversion: read instead (and refused there)
        return self._views.view(name, self._source.stored(name, dtype))
