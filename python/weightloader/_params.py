"""A torch module's tensors as the C++ loader sees them: name, dtype, shape and memory."""
import sys

from . import dtypes
from .errors import InvalidArgumentError


def module_tensors(module):
    """(name, dtype, shape, data pointer, bytes) for every parameter and persistent buffer, as
    state_dict names them. Non-contiguous tensors, and tensors neither on the CPU nor on a CUDA
    device, are refused, never copied."""
    out = []
    for name, t in module.state_dict(keep_vars=True).items():
        t = t.data if hasattr(t, "data") else t
        if t.device.type not in ("cpu", "cuda"):
            raise InvalidArgumentError(f"'{name}' is on {t.device}; only CPU and CUDA tensors are filled in place",
                                       "InvalidArgument", tensor=name)
        if not t.is_contiguous():
            raise InvalidArgumentError(f"'{name}' is not contiguous (strides {t.stride()}); make it contiguous first",
                                       "InvalidArgument", tensor=name)
        out.append((name, dtypes.name_of(t.dtype), list(t.shape), t.data_ptr(), t.numel() * t.element_size()))
    return out


def module_device(module):
    """Where every tensor of `module` is, as the C++ library names it ("cpu", "cuda:0"); a module
    split over several devices is refused (load each device's part with its own call)."""
    devices = {}
    for name, t in module.state_dict(keep_vars=True).items():
        d = t.device
        devices.setdefault("cpu" if d.type == "cpu" else f"{d.type}:{d.index or 0}", name)
    if len(devices) > 1:
        raise InvalidArgumentError("the module's tensors are on several devices: " +
                                   ", ".join(f"{d} ('{n}')" for d, n in devices.items()), "InvalidArgument")
    return next(iter(devices), "cpu")


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
