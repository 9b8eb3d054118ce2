"""safetensors' C64 (complex64), which the C++ library has no type for (adding one would reach its
conversion tables): the library refuses a file holding C64 tensors once the header has passed
every other rule, so such a file is opened again through _core.safetensors_with_c64, the library's
catalogue of it with each C64 tensor as F32 pairs (a last dimension of 2: the same bytes), and
shown here as C64. Everything else about the reader (zero-copy views, slices, devices) is
safe_open.py's."""
from .. import _core
from ..errors import Error, InvalidArgumentError


def itemsize(dtype):
    """Bytes per element of a library dtype, or of C64 (a pair of F32)."""
    return 2 * _core.dtype_size("F32") if dtype == "C64" else _core.dtype_size(dtype)


def _with_pairs(args):
    """A C64Source for opener arguments (path) or (label, bytes); None when they are no safetensors
    file whose only dtype the library lacks is C64."""
    try:
        opened = _core.safetensors_with_c64(*args)
    except Error:
        return None
    return C64Source(*opened) if opened is not None else None


def with_c64(opener):
    """opener(label, ...) with a file or bytes the library refused for C64 opened here instead."""
    def open_(*args):
        try:
            return opener(*args)
        except InvalidArgumentError as err:
            source = _with_pairs(args) if err.code == "UnsupportedDType" else None
            if source is None:
                raise  # another dtype the library lacks (F4, F8_E8M0, ...), or another failure: its error stands
            return source
    return open_


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
