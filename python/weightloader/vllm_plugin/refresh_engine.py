"""refresh(llm, newer): a live vLLM engine started with load_format="weightloader" brought up to a
newer checkpoint by reading only the tensors whose recorded sha256 changed (weightloader.refresh's
comparison), in every worker, through vLLM's collective_rpc and the worker extension the plugin
installs (worker.WeightloaderWorkerExtension)."""
import os
import time

from .. import errors
from ..errors import _from_core
from ..refresh import RefreshReport, refresh_report
from .model_loader import LOAD_FORMAT

EXTENSION = "weightloader.vllm_plugin.worker.WeightloaderWorkerExtension"


def refresh(llm, newer, since=None):
    """Writes into the parameters of `llm` (a vllm.LLM whose weights load_format="weightloader"
    loaded), in every worker, the tensors of the checkpoint `newer` whose bytes differ from those of
    the checkpoint the engine holds (the one it was started from or last refreshed to; `since`
    names it otherwise), with the other tensors of each vLLM layer they go into (vLLM rebuilds a
    fused qkv_proj or gate_up_proj whole), and reads nothing else. Then vLLM's prefix cache is
    reset (its KV blocks came from the older weights). Returns a RefreshReport: `changed`,
    `unchanged`, `unrecorded` as weightloader.refresh's; `loaded` the tensors read; `bytes_read`
    the workers' together; `ranks` each worker's report."""
    _check_engine(llm)
    started = time.perf_counter()
    since = None if since is None else os.fspath(since)
    ranks = llm.collective_rpc("weightloader_refresh", args=(os.fspath(newer), since))
    failed = next((r["error"] for r in ranks if "error" in r), None)
    if failed:  # the worker's weightloader error, as it was raised there
        raise getattr(errors, failed["class"])(failed["message"], failed["code"], failed["file"], failed["tensor"])
    llm.reset_prefix_cache()
    ranks = [RefreshReport(r) for r in ranks]
    first = ranks[0]
    report = {"loaded": first.loaded, "layers": first.layers, "bytes_read": sum(r.bytes_read for r in ranks),
              "seconds": time.perf_counter() - started, "missing": [], "unexpected": [], "ranks": ranks}
    return refresh_report(report, first.changed, len(first.changed) + first.unchanged, first.unrecorded)


def _check_engine(llm):
    from vllm.utils.import_utils import resolve_obj_by_qualname

    from .worker import WeightloaderWorkerExtension
    config = llm.llm_engine.vllm_config
    if config.load_config.load_format != LOAD_FORMAT:
        raise _from_core("InvalidArgument", f"refresh: this vLLM engine loaded its weights with load_format="
                         f"'{config.load_config.load_format}'; only an engine started with load_format='{LOAD_FORMAT}' "
                         "knows which tensors it holds", "", "", False)
    extension = config.parallel_config.worker_extension_cls
    if not (extension and issubclass(resolve_obj_by_qualname(extension), WeightloaderWorkerExtension)):
        raise _from_core("InvalidArgument", f"refresh: the engine's worker_extension_cls is '{extension}', not "
                         f"weightloader's: let it subclass {EXTENSION} (the plugin sets it when none is given)",
                         "", "", False)
