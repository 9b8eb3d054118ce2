"""A torch module's tensors as the C++ loader sees them: name, dtype, shape and memory."""
import sys

from . import dtypes
from .errors import InvalidArgumentError


def module_tensors(module):
    """(name, dtype, shape, data pointer, bytes) for every parameter and persistent buffer, as
    state_dict names them. Non-contiguous or non-CPU tensors are refused, never copied."""
    out = []
    for name, t in module.state_dict(keep_vars=True).items():
        t = t.data if hasattr(t, "data") else t
        if t.device.type != "cpu":
            raise InvalidArgumentError(f"'{name}' is on {t.device}; only CPU tensors are filled in place", "InvalidArgument",
                                       tensor=name)
        if not t.is_contiguous():
            raise InvalidArgumentError(f"'{name}' is not contiguous (strides {t.stride()}); make it contiguous first",
                                       "InvalidArgument", tensor=name)
        out.append((name, dtypes.name_of(t.dtype), list(t.shape), t.data_ptr(), t.numel() * t.element_size()))
    return out


def progress_for(progress, what):
    """The callable the C++ load reports to: the caller's, a tqdm bar on a terminal, or None."""
    if callable(progress):
        return progress
    if progress is False or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    state = {}

    def update(done, total):
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = tqdm(total=total, unit="B", unit_scale=True, desc=what, leave=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
        return True
    return update
