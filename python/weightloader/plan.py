"""weightloader.plan: what loading a checkpoint will read and hold, per rank, before it reads."""
from . import _core
from .loaders import _kwarg_value


def plan(model, weight_loader="auto", tensor_parallel_size=1, expert_parallel=False, mirror=False, **kwargs):
    """The plan of loading `model` (a path or a cached model id), reading no tensor data: per rank,
    the bytes read from each file, peak host and device memory, and the time this machine's measured
    rates give (None: not measured). The parameters are the engine's per-rank model when the
    checkpoint has a configuration it runs (mirror=True: a model mirroring the checkpoint, what
    `weightloader load` fills). kwargs are the loader's (dtype, device, io, staging_bytes,
    max_host_memory, ...); a max_host_memory no rank fits raises an Error with code OverBudget.
    str() of the result prints it; .to_json() is the CLI's `plan --json`."""
    chosen = {k: _kwarg_value(k, v) for k, v in kwargs.items()}
    name = weight_loader
    if name == "auto":
        name, detected = _core.detect_loader(str(model))
        chosen = {**detected, **chosen}
    loader = _core.create_loader(name, chosen)
    return loader.plan(loader.get_weights(str(model)), tensor_parallel_size, expert_parallel, mirror)
