"""A drop-in for `safetensors.safe_open` and `safetensors.torch` (load_file, load, save_file, save)
over every checkpoint weightloader reads: safetensors files, GGUF, PyTorch zip checkpoints,
llama2.c files and checkpoint directories.

    from weightloader.safe_open import safe_open, load_file, save_file
    with safe_open("model.gguf", framework="pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)              # Q8_0 and friends come out decoded
        rows = f.get_slice("lm_head.weight")[:128]

Zero-copy: a tensor whose stored bytes are usable as they are (raw little-endian, contiguous,
aligned to its element size, in a local file: the library's rule, load_into's zero_copy's too) is a
view of a private copy-on-write mapping of the file (MAP_PRIVATE, made by the library). Such
tensors are writable; a write never reaches the file, and every tensor of one reader shares that
mapping (a write to one is seen by another get_tensor of the same name from the same reader,
never by another reader). A tensor keeps its mapping alive after the reader is closed and after
the file is deleted. The file must not be truncated while such a tensor lives (as with any
mapping, reading a page past the new end would raise SIGBUS). BF16 is zero-copy on the torch side
too. Encoded tensors (GGUF quantised types, llama2.c int8 groups, big-endian or
strided PyTorch storages, q/k rows presented in another order) are decoded into a fresh tensor.

Differences from safetensors, all additions or stricter errors:
  * keys() is sorted (as safetensors does); offset_keys() gives file order (file by file, by offset).
  * metadata() of a safetensors file is its __metadata__ (None when it has none, as safetensors
    gives); for other inputs it is the catalogue's metadata as strings (GGUF keys, llama2.c header
    fields, a directory's config.json text under "config.json"), None when empty.
  * An unknown tensor name raises TensorNotFoundError: a weightloader.NotFoundError (code
    "TensorNotFound", so also a FileNotFoundError) that is also a KeyError.
  * A missing path is a FileNotFoundError, a corrupt or hostile file a weightloader.FormatError (one
    that no format recognises: UnknownFormatError, also a ValueError as the library raises it), a
    bad argument (framework, device, slice step, reading after close) a ValueError
    (weightloader.InvalidArgumentError), a dtype the framework cannot hold a TypeError.
  * get_tensor, get_slice and safe_open take an optional dtype= ("f32", torch.float32, ...): the
    values are converted while reading (no zero-copy then).
  * Slices follow Python's rules (negative and out-of-range bounds clamp as they would on the full
    tensor; ints drop their dimension, negative ints count from the end); a step other than 1 is a
    ValueError; one Ellipsis is accepted. Zero-copy tensors slice as views of the mapping; encoded
    ones read only the rows of the most selective sliced dimension that the encoding allows.
  * save_file / save accept torch tensors and NumPy arrays; non-contiguous ones are written as
    their contiguous copies and tensors that share memory are written once each. Tensors are
    ordered as safetensors orders them (larger element types first, then by name), so each is
    aligned to its element size.
"""
import contextlib
import operator
import os
import sys
from collections.abc import Mapping

import numpy as np
import torch

from . import _core, dtypes
from .errors import FormatError, InvalidArgumentError, NotFoundError, UnknownFormatError

__all__ = ["safe_open", "load_file", "load", "save_file", "save", "TensorNotFoundError", "UnknownFormatError"]


class TensorNotFoundError(NotFoundError, KeyError):
    """A tensor name the checkpoint does not hold (code "TensorNotFound"); also a KeyError."""


def _no_tensor(origin, name):
    return TensorNotFoundError(f"{origin}: tensor '{name}': no such tensor [TensorNotFound]", "TensorNotFound", origin,
                               str(name))


def _recognised(open_fn, *args):
    """open_fn(*args), with an error whose message quotes bytes that are not UTF-8 (a hostile name)
    raised as a FormatError."""
    try:
        return open_fn(*args)
    except UnicodeDecodeError as err:  # the library's message could not become a str
        where = args[0] if isinstance(args[0], str) else "<checkpoint>"
        raise FormatError(f"{where}: the file was rejected; its error message quotes bytes that are not UTF-8 "
                          f"({err.reason}) [InvalidHeader]", "InvalidHeader", where) from None


# safetensors' C64, which the library has no type for: weightloader.safetensors serves it as pairs of
# F32 (safetensors/_c64.py); the frameworks hold it as complex64.
_COMPLEX = {"C64": (torch.complex64, np.dtype(np.complex64))}
_FRAMEWORKS = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np"}
# safetensors' F4 (the library decodes it; stored_type "F4"): torch's packed dtype when it has one.
_FLOAT4 = getattr(torch, "float4_e2m1fn_x2", None)


def _float4_shape(shape, file, name):
    """The shape of an F4 tensor of logical `shape` as torch holds it packed (float4_e2m1fn_x2, two codes
    a byte, the first in the low nibble): the last dimension halved. InvalidArgument when it is odd."""
    shape = list(shape)
    if not shape or shape[-1] % 2:
        raise InvalidArgumentError(
            f"{file}: tensor '{name}': F4 {shape} has an odd last dimension, which torch.float4_e2m1fn_x2 (two "
            "values a byte along it) cannot hold; pass dtype= to read it decoded [InvalidArgument]",
            "InvalidArgument", file, name)
    return shape[:-1] + [shape[-1] // 2]

# safetensors' dtype order (its Dtype enum): save_file stores larger types first, then by name.
_SAVE_ORDER = {name: i for i, name in enumerate(
    ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"])}


def _framework(framework):
    fw = _FRAMEWORKS.get(str(framework).lower()) if isinstance(framework, str) else None
    if fw is None:
        raise InvalidArgumentError(f"framework {framework!r} is not supported: use \"pt\" (torch) or \"np\" (NumPy)",
                                   "InvalidArgument")
    return fw


def _device(framework, device):
    if device is None:
        device = "cpu"
    if framework == "np":
        if str(device) != "cpu":
            raise InvalidArgumentError(f"device {device!r} is not supported for framework \"np\" (only \"cpu\")",
                                       "InvalidArgument")
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InvalidArgumentError(f"device {device!r} is invalid", "InvalidArgument") from None
    return None if dev.type == "cpu" else dev


def _catalogue(source):
    """(tensor names, metadata) of a source. Names or metadata that are not UTF-8 (which GGUF and
    pickles do not forbid) cannot be Python strings: a FormatError, not a UnicodeDecodeError."""
    try:
        return list(source.keys()), dict(source.metadata())
    except UnicodeDecodeError as err:
        origin = source.origin
        raise FormatError(f"{origin}: tensor names or metadata are not valid UTF-8 ({err.reason}) [InvalidHeader]",
                          "InvalidHeader", origin) from None


def _open_source(path):
    """A catalogue of `path`: the "local" loader for a file, the loader detected by content for a
    directory (hf, or local with the pattern of the files found). Quantized checkpoints (GPTQ, AWQ,
    bitsandbytes, FP8) show their tensors as stored, as safetensors' safe_open does."""
    if not os.path.isdir(path):
        return _core.create_loader("local", {"quantized": "as_stored"}).get_weights(path)
    name, kwargs = _core.detect_loader(path)
    stored = {**kwargs, "quantized": "as_stored"} if name in ("local", "hf") else kwargs
    return _core.create_loader(name, stored).get_weights(path)


def _private_views(source):
    """The zero-copy views of a reader: the library's, over its private mappings of the source's files
    (a source that serves dtypes of its own, as the drop-in's C64, gives them through its own)."""
    return _core.PrivateViews(source) if isinstance(source, _core.Source) else source.private_views()


def _open_reader(filename, framework, device, dtype=None, mappable=True, opener=_open_source):
    """(the reader state, its metadata) of a checkpoint path: what safe_open and weightloader.safetensors
    share. opener(path) gives the catalogue (a Source)."""
    fw = _framework(framework)
    dev = _device(fw, device)
    conv = dtypes.name_of(dtype) if dtype is not None else None
    path = os.fspath(filename)
    if os.path.exists(path):
        path = os.path.abspath(path)  # the catalogue's file names then survive a chdir
    source = _recognised(opener, path)
    state = _State(source, fw, dev, conv, mappable)
    metadata = state.metadata or None
    if source.format == "safetensors" and os.path.isfile(path):
        metadata = _core.safetensors_metadata(path)  # its __metadata__ exactly: None when it has none
    return state, metadata


def _normalise_index(index, shape):
    """[(begin, end, selected)] for every dimension of `shape`: ints select (selected=True, the
    dimension disappears), slices narrow, missing trailing dimensions are whole."""
    if not isinstance(index, tuple):
        index = (index,)
    ellipses = sum(1 for i in index if i is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        at = next(k for k, i in enumerate(index) if i is Ellipsis)
        fill = len(shape) - (len(index) - 1)
        if fill < 0:
            raise IndexError(f"too many indices for a tensor of {len(shape)} dimensions: {len(index) - 1} given")
        index = index[:at] + (slice(None),) * fill + index[at + 1:]
    if len(index) > len(shape):
        raise IndexError(f"too many indices for a tensor of {len(shape)} dimensions: {len(index)} given")
    out = []
    for dim, size in enumerate(shape):
        ix = index[dim] if dim < len(index) else slice(None)
        if isinstance(ix, slice):
            if ix.step is not None and operator.index(ix.step) != 1:
                raise InvalidArgumentError(f"slice step {ix.step} along dimension {dim}: only a step of 1 is supported",
                                           "InvalidArgument")
            begin, end, _ = slice(ix.start, ix.stop).indices(size)
            out.append((begin, max(begin, end), False))
            continue
        if isinstance(ix, (bool, np.bool_)) or ix is None:
            raise TypeError(f"index {ix!r} along dimension {dim}: only ints, start:stop slices and ... are supported")
        try:
            i = operator.index(ix)
        except TypeError:
            raise TypeError(f"index {ix!r} along dimension {dim}: only ints, start:stop slices and ... are supported") \
                from None
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError(f"index {operator.index(ix)} is out of bounds for dimension {dim} of size {size}")
        out.append((i, i + 1, True))
    return out


class _State:
    """What a reader and its slices share: the catalogue, the file mappings, the framework."""

    def __init__(self, source, framework, device, dtype, mappable):
        self.source, self.framework, self.device, self.dtype = source, framework, device, dtype
        self.names, self.metadata = _catalogue(source)
        self._views = _private_views(source) if mappable else None
        self._infos = {}

    # --- catalogue ---

    def info(self, name):
        info = self._infos.get(name)
        if info is None:
            if not isinstance(name, str) or name not in self.source:
                raise _no_tensor(self.source.origin, name)
            info = self._infos[name] = self.source.info(name)
        return info

    def target(self, info, dtype):
        if dtype is not None:
            return dtypes.name_of(dtype)
        return self.dtype or info["dtype"]

    def element_type(self, name):
        """The framework's dtype for a library dtype name; TypeError when it has none."""
        if name in _COMPLEX:
            return _COMPLEX[name][0 if self.framework == "pt" else 1]
        return dtypes.to_torch(name) if self.framework == "pt" else dtypes.to_numpy(name)

    # --- memory ---

    def zero_copy(self, info, target):
        """The whole tensor as a view of this reader's private mapping of its file, where the library
        says its stored bytes are usable as `target` as they are; None when they need work (or
        belong on a CUDA device)."""
        if self._views is None or self.on_cuda():
            return None
        elem = self.element_type(target)
        buffer = self._views.view(info["name"], target)
        if buffer is None:
            return None
        frombuffer = torch.frombuffer if self.framework == "pt" else np.frombuffer
        return frombuffer(buffer, dtype=elem).reshape(info["shape"])

    def on_cuda(self):
        return self.device is not None and self.device.type == "cuda"

    def empty(self, shape, target):
        elem = self.element_type(target)
        if self.framework == "np":
            return np.empty(shape, dtype=elem)
        # A CUDA tensor is filled where it is: read and converted on the host, copied through pinned buffers.
        return torch.empty(shape, dtype=elem, device=self.device if self.on_cuda() else "cpu")

    def decode(self, name, shape, target, slice_=None):
        """A fresh tensor of `shape` filled by the library (decoded, converted, sliced)."""
        out = self.empty(shape, target)
        if self.framework == "pt":
            ptr, nbytes = out.data_ptr(), out.numel() * out.element_size()
        else:
            ptr, nbytes = out.ctypes.data, out.nbytes
        if nbytes and self.on_cuda():
            self.source.read_into(name, target, ptr, nbytes, slice_, device=f"cuda:{out.device.index or 0}")
        elif nbytes:
            self.source.read_into(name, target, ptr, nbytes, slice_)
        return out

    def finish(self, t):
        return t.to(self.device) if self.device is not None else t

    # --- reads ---

    def tensor(self, name, dtype=None):
        info = self.info(name)
        if self.packs_f4(info, dtype):
            return self.finish(self.packed_f4(info))
        target = self.target(info, dtype)
        self.element_type(target)  # TypeError before any read
        t = self.zero_copy(info, target)
        if t is None:
            t = self.decode(name, info["shape"], target)
        return self.finish(t)

    def fresh_tensors(self, names):
        """Every tensor of `names` in fresh memory of its own (never a view of the file), all read in
        one batch of the I/O engine: cold, that beats viewing the mapping and copying each view."""
        out, requests = {}, []
        for name in names:
            info = self.info(name)
            if self.packs_f4(info, None):
                out[name] = self.packed_f4(info)
                continue
            target = self.target(info, None)
            t = out[name] = self.empty(info["shape"], target)
            requests.append((name, target, t.data_ptr(), t.numel() * t.element_size()))
        device = f"cuda:{self.device.index or 0}" if self.on_cuda() else "cpu"
        self.source.read_many_into(requests, device)
        return {name: self.finish(t) for name, t in out.items()}

    def packs_f4(self, info, dtype):
        """Whether the tensor is handed over packed, as torch's float4_e2m1fn_x2 (not decoded)."""
        return info["stored_type"] == "F4" and _FLOAT4 is not None and self.framework == "pt" and dtype is None \
            and self.dtype is None

    def packed_f4(self, info):
        """An F4 tensor as stored, as safetensors hands it to torch (_float4_shape)."""
        out = torch.empty(_float4_shape(info["shape"], info["file"], info["name"]), dtype=torch.uint8)
        if out.numel():
            self.source.read_stored_into(info["name"], out.data_ptr(), out.numel())
        return out.view(_FLOAT4)

    def read_ranges(self, name, target, ranges):
        """The part of a tensor that ranges ([(begin, end, selected)] per dimension) select."""
        info = self.info(name)
        shape = list(info["shape"])
        self.element_type(target)
        key = tuple(b if sel else slice(b, e) for b, e, sel in ranges) + (Ellipsis,)
        full = self.zero_copy(info, target)
        if full is not None:
            return self.finish(full[key])
        if any(b == e for b, e, _ in ranges):
            return self.finish(self.empty([e - b for b, e, sel in ranges if not sel], target))
        # Read only the rows of one dimension: the most selective one the encoding can slice.
        candidates = sorted((d for d, (b, e, _) in enumerate(ranges) if e - b < shape[d]),
                            key=lambda d: ((ranges[d][1] - ranges[d][0]) / shape[d], d))
        for d in candidates:
            b, e, sel = ranges[d]
            if not self.source.reads_slice(name, d, b, e):  # it would cut through the encoding's blocks
                continue
            part = shape[:d] + [e - b] + shape[d + 1:]
            out = self.decode(name, part, target, (d, b, e))
            rest = list(key)
            rest[d] = 0 if sel else slice(None)
            return self.finish(self._dense(out[tuple(rest)]))
        return self.finish(self._dense(self.decode(name, shape, target)[key]))

    def _dense(self, t):
        if self.framework == "pt":
            return t.contiguous()
        return t if t.flags.c_contiguous else t.copy(order="C")


class _SafeSlice:
    """A tensor not read yet: get_shape(), get_dtype(), and [index] reading only what it selects,
    by its reader's index rule (ranges, or None: the framework indexes the whole tensor). It stays
    usable after its reader is closed."""

    def __init__(self, reader, name, info, dtype):
        self._reader, self._state, self._name, self._info, self._dtype = reader, reader._live(), name, info, dtype
        self._target = self._state.target(info, dtype)

    def get_shape(self):
        return list(self._info["shape"])

    def get_dtype(self):
        return self._target

    def __getitem__(self, index):
        with self._reader._errors():
            ranges = self._reader._index_rule(index, self._info["shape"])
            if ranges is None:
                return self._state.tensor(self._name, self._dtype)[index]
            return self._state.read_ranges(self._name, self._target, ranges)

    def __repr__(self):
        return f"<slice of '{self._name}': {self._target} {self.get_shape()}>"


class safe_open:  # noqa: N801  (safetensors' spelling)
    """safe_open(path, framework="pt", device="cpu", dtype=None): a checkpoint of any format
    weightloader reads, read tensor by tensor. A context manager; without `with`, close() ends it.
    framework: "pt" (torch tensors) or "np" (NumPy arrays). device: where torch tensors go.
    dtype: convert every tensor to it while reading (default: as stored).

    weightloader.safetensors.safe_open is this reader with safetensors' argument rules and errors:
    a subclass overrides _errors (how the library's errors are raised), _closed and _no_tensor (the
    errors of a closed reader and of an unknown name) and _index_rule (how a slice's index reads)."""

    _index_rule = staticmethod(_normalise_index)

    def __init__(self, filename, framework="pt", device="cpu", dtype=None):
        self._state, self._metadata = _open_reader(filename, framework, device, dtype)

    # --- what a drop-in overrides ---

    def _errors(self):
        """A context in which reads run: weightloader's errors as they are."""
        return contextlib.nullcontext()

    def _closed(self):
        return InvalidArgumentError("the safe_open reader is closed", "InvalidArgument")

    def _no_tensor(self, name):
        return _no_tensor(self._state.source.origin, name)

    # --- the reader ---

    def _live(self):
        if self._state is None:
            raise self._closed()
        return self._state

    def _info(self, name):
        state = self._live()
        if not isinstance(name, str) or name not in state.source:
            raise self._no_tensor(name)
        return state.info(name)

    def __enter__(self):
        self._live()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Ends the reader. Tensors already returned stay valid (they keep their mapping)."""
        self._state = None

    def keys(self):
        """The tensor names, sorted."""
        return sorted(self._live().names)

    def offset_keys(self):
        """The tensor names in file order: file by file, each by offset."""
        s = self._live()
        files, order = {}, []
        for name in s.names:
            info = s.info(name)
            order.append((files.setdefault(info["file"], len(files)), info["offset"], name))
        return [name for _, _, name in sorted(order)]

    def metadata(self):
        """The file's string metadata (a safetensors file's __metadata__), or None."""
        self._live()
        return dict(self._metadata) if self._metadata is not None else None

    def get_tensor(self, name, dtype=None):
        """The whole tensor: a view of the file when its bytes are usable as they are, else decoded."""
        self._info(name)
        with self._errors():
            return self._state.tensor(name, dtype)

    def get_tensors(self):
        """Every tensor, by name, in the order of offset_keys()."""
        return {name: self.get_tensor(name) for name in self.offset_keys()}

    def get_slice(self, name, dtype=None):
        """An object with get_shape(), get_dtype() and indexing that reads only what it selects."""
        return _SafeSlice(self, name, self._info(name), dtype)

    @property
    def format(self):
        """The checkpoint's format: "safetensors", "gguf", "pytorch", "llama2c", ..."""
        return self._live().source.format

    def __contains__(self, name):
        return name in self._live().source

    def __len__(self):
        return len(self._live().source)

    def __repr__(self):
        if self._state is None:
            return "<safe_open (closed)>"
        return f"<safe_open {self._state.source.origin!r}: {self._state.source.format}, {len(self._state.source)} tensors>"


def load_file(filename, device="cpu", *, copy=False):
    """Every tensor of a checkpoint (any format weightloader reads) as a dict of torch tensors: on the
    CPU, views of the file's mapping where the stored bytes are usable as they are. copy=True: every
    tensor in fresh memory of its own, read in one batch of the I/O engine (io=auto, its threads):
    the fastest way to own the bytes of a file that is not in the page cache."""
    with safe_open(filename, framework="pt", device=device) as f:
        if copy:
            return f._live().fresh_tensors(f.keys())
        return {name: f.get_tensor(name) for name in f.keys()}


def load(data):
    """Every tensor of a checkpoint given as bytes (found by content: safetensors, GGUF, ...)."""
    if not isinstance(data, bytes):
        data = bytes(data)
    state = _State(_recognised(_core.from_bytes, "<bytes>", data), "pt", None, None, mappable=False)
    return {name: state.tensor(name) for name in sorted(state.names)}


def _entries(tensors):
    """(name, dtype, shape, data pointer, nbytes) in safetensors' order, and the objects that own the memory."""
    if not isinstance(tensors, Mapping):
        raise InvalidArgumentError(f"tensors must be a dict of name to tensor, not {type(tensors).__name__}",
                                   "InvalidArgument")
    entries, owners = [], []
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"tensor names must be str, not {type(name).__name__} ({name!r})",
                                       "InvalidArgument")
        if isinstance(t, torch.Tensor):
            if t.layout != torch.strided:
                raise InvalidArgumentError(f"'{name}' is a {t.layout} tensor; only dense tensors can be saved",
                                           "InvalidArgument", tensor=name)
            t = t.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            t = t.contiguous()
            dtype = dtypes.name_of(t.dtype)
            entry = (name, dtype, list(t.shape), t.data_ptr(), t.numel() * t.element_size())
        elif isinstance(t, np.ndarray):
            if t.dtype.byteorder == ">" or (t.dtype.byteorder == "=" and sys.byteorder == "big"):
                t = t.astype(t.dtype.newbyteorder("<"))
            if not t.flags.c_contiguous:
                t = t.copy(order="C")
            dtype = dtypes.name_of(t.dtype.newbyteorder("="))
            entry = (name, dtype, list(t.shape), t.ctypes.data, t.nbytes)
        else:
            raise InvalidArgumentError(f"'{name}' is a {type(t).__name__}, not a torch tensor or NumPy array",
                                       "InvalidArgument", tensor=name)
        entries.append(entry)
        owners.append(t)
    order = sorted(range(len(entries)), key=lambda i: (-_SAVE_ORDER.get(entries[i][1], 0), entries[i][0]))
    return [entries[i] for i in order], owners


def _metadata_arg(metadata):
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in metadata.items()):
        raise InvalidArgumentError("metadata must be a dict of str to str", "InvalidArgument")
    return dict(metadata)


def save_file(tensors, filename, metadata=None, tensor_digests=False):
    """Writes `tensors` (a dict of torch tensors or NumPy arrays) as a safetensors file, atomically.
    tensor_digests: also each tensor's sha256 in __metadata__ ("weightloader.tensor_sha256"), so that
    weightloader.refresh() finds the tensors a later checkpoint changed without reading them."""
    entries, owners = _entries(tensors)
    _core.write_safetensors(os.fspath(filename), entries, _metadata_arg(metadata), tensor_digests)
    del owners  # the memory had to live until the write was done


def save(tensors, metadata=None):
    """The bytes of the safetensors file save_file would write (made in memory, no file)."""
    entries, owners = _entries(tensors)
    data = _core.serialize_safetensors(entries, _metadata_arg(metadata))
    del owners  # the memory had to live until the bytes were copied
    return data
