"""The index rules of safetensors' own slicer, which it applies for framework "numpy" and for
backend "pread" (for torch over a mapping it indexes a torch view instead): ints (negative ones
count from the end) and start:stop slices, one per leading dimension; a step and indices beyond the
last dimension are ignored, as safetensors ignores them; bounds past a dimension are errors, not
clamped; `[]` selects nothing of the first dimension."""
import operator

from ._error import SafetensorError


def _indices(index):
    if isinstance(index, list):
        if index:
            raise SafetensorError("Non empty lists are not implemented")
        return [slice(0, 0)]
    return list(index) if isinstance(index, tuple) else [index]


def _integer(value, unsigned):
    if isinstance(value, slice) or value is None or value is Ellipsis:
        raise TypeError(f"index {value!r}: safetensors' slicer takes only ints and start:stop slices")
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError(f"index {value!r}: safetensors' slicer takes only ints and start:stop slices") from None
    if unsigned and i < 0:
        raise OverflowError("can't convert negative int to unsigned")  # slice bounds are unsigned there
    return i


def ranges(index, shape):
    """[(begin, end, selected)] for every dimension of shape, by safetensors' rules."""
    shape = list(shape)
    parsed = []  # (start or None, stop or None, selected)
    for dim, (ix, size) in enumerate(zip(_indices(index), shape)):
        if isinstance(ix, slice):
            start = None if ix.start is None else _integer(ix.start, True)
            stop = None if ix.stop is None else _integer(ix.stop, True)
            parsed.append((start, stop, False))
            continue
        i = _integer(ix, False)
        if i < 0:
            if i + size < 0:
                raise SafetensorError(f"Invalid index {i} for dimension {dim} of size {size}")
            i += size
        parsed.append((i, i + 1, True))
    shown = "[" + ", ".join(str(b) if sel else f"{'' if b is None else b}:{'' if e is None else e}"
                            for b, e, sel in parsed) + "]"
    out = [(0, size, False) for size in shape]
    for dim in reversed(range(len(parsed))):  # safetensors reports the last bad dimension
        b, e, sel = parsed[dim]
        size = shape[dim]
        begin, end = b or 0, size if e is None else e
        if begin >= size or end > size:
            asked = begin if begin >= size else end - 1
            raise SafetensorError(f"Error during slicing {shown} with shape {shape}: index {asked} out of bounds "
                                  f"for tensor dimension #{dim} of size {size}")
        if begin > end:
            raise SafetensorError(f"Error during slicing {shown} with shape {shape}: start {begin} is past stop {end} "
                                  f"in tensor dimension #{dim}")
        out[dim] = (begin, end, sel)
    return out
