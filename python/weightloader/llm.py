"""vLLM's entry point over the C++ engine: LLM(model, weight_loader=..., weight_loader_kwargs=...)
and generate(prompts, SamplingParams(...)). A C++ loader (a built-in, by name or class) loads on
the engine directly; a loader written in Python fills the engine's parameters in place, through a
torch module whose parameters alias the engine's memory."""
from dataclasses import dataclass, field
from typing import List, Optional

import torch

from . import _core, dtypes
from .engine_module import EngineModule
from .errors import InvalidArgumentError
from .loaders import BaseWeightLoader, CoreWeightLoader, WeightLoaderRegistry, _kwarg_value
from .load_into import make_path_loader
from .refresh import changed_tensors, recorded_digests, refresh_report


@dataclass
class SamplingParams:
    """vLLM's sampling parameters: temperature 0 is greedy; seed None draws one from the clock."""
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: Optional[int] = None


@dataclass
class CompletionOutput:
    index: int
    text: str                      # the generated text
    token_ids: List[int]


@dataclass
class RequestOutput:
    prompt: object
    prompt_token_ids: List[int]
    outputs: List[CompletionOutput]
    full_text: str = ""            # the prompt then the generated text, as llama2.c's run prints it
    tokens_per_second: float = 0.0

    @property
    def text(self):
        return self.outputs[0].text

    @property
    def token_ids(self):
        return self.outputs[0].token_ids


def _resolve(loader, kwargs):
    """(C++ loader name, kwargs) when the engine can load by itself, else a Python loader instance."""
    if isinstance(loader, str) and loader != "auto" and loader in WeightLoaderRegistry._python:
        loader = WeightLoaderRegistry._python[loader]
    if isinstance(loader, str):
        return loader, {k: _kwarg_value(k, v) for k, v in kwargs.items()}
    if isinstance(loader, type):
        if not issubclass(loader, BaseWeightLoader):
            raise InvalidArgumentError(f"{loader!r} is not a BaseWeightLoader subclass", "InvalidArgument")
        loader = loader(**kwargs)
    elif kwargs:
        raise InvalidArgumentError("weight_loader_kwargs go with a loader name or class, not an instance", "InvalidArgument")
    if not isinstance(loader, BaseWeightLoader):
        raise InvalidArgumentError(f"{loader!r} is not a weight loader", "InvalidArgument")
    plain = isinstance(loader, CoreWeightLoader) and type(loader).get_weights is CoreWeightLoader.get_weights and \
        type(loader).load_weights is BaseWeightLoader.load_weights
    return (loader.loader_name, loader.kwargs) if plain else loader


class _unwritten:
    """A bit pattern no checkpoint holds in a whole parameter (a NaN with an unusual payload, each
    element): what a parameter no write reached (param.data.copy_ included, which torch's version
    counter does not see) still holds after a Python loader ran. A checkpoint's own NaN is not it."""

    _BITS = {torch.float32: (torch.int32, 0x7FA5A5A5), torch.bfloat16: (torch.int16, 0x7FA5),
             torch.float16: (torch.int16, 0x7E5A)}

    @classmethod
    def fill(cls, p):
        as_int, bits = cls._BITS[p.dtype]
        with torch.no_grad():
            p.view(as_int).fill_(bits)

    @classmethod
    def holds(cls, p):
        as_int, bits = cls._BITS[p.dtype]
        return bool((p.view(as_int) == bits).all())


class LLM:
    """LLM(model, weight_loader="auto", weight_loader_kwargs=None, dtype=None, tensor_parallel_size=1,
    enable_expert_parallel=False).

    enable_expert_parallel (vLLM's name): with tensor_parallel_size N, each rank holds and reads
    num_experts / N whole experts of a mixture-of-experts model instead of a slice of every expert.

    weight_loader: a registered name (C++ or Python), a class or an instance; vLLM's load_format=
    and model_loader_extra_config= are accepted as aliases. With a Python loader, its get_weights
    is called once and its load_weights once per tensor-parallel rank, each time with that rank's
    EngineModule (so a Python load_weights sees the ranks one after the other, each holding its
    slices). Every parameter must be filled: one that neither the engine's load plan (the module's
    load_weights) filled nor any other write changed is an error listing them (strict=False allows
    it)."""

    def __init__(self, model, weight_loader="auto", weight_loader_kwargs=None, dtype=None, tensor_parallel_size=1,
                 tokenizer=None, threads=0, strict=True, progress=None, load_format=None,
                 model_loader_extra_config=None, enable_expert_parallel=False):
        loader = load_format if load_format is not None else weight_loader
        kwargs = dict(model_loader_extra_config if model_loader_extra_config is not None else weight_loader_kwargs or {})
        dtype_name = dtypes.name_of(dtype) if dtype is not None else ""
        resolved = _resolve(loader, kwargs)
        common = dict(dtype=dtype_name, tensor_parallel_size=tensor_parallel_size, expert_parallel=enable_expert_parallel,
                      tokenizer=str(tokenizer or ""), threads=threads)
        if isinstance(resolved, tuple):
            name, core_kwargs = resolved
            self._core = _core.LLM(str(model), name, core_kwargs, progress=progress, **common)
            self.modules = []
            self._loaded = (name, core_kwargs, str(model))  # what refresh() compares a newer checkpoint with
            return
        self._loaded = None
        self._core = _core.LLM(str(model), "auto", {}, defer_load=True, **common)
        weights = resolved.get_weights(model)
        if self._core.ranks > 1 and not hasattr(weights, "keys"):
            weights = list(weights)  # every rank reads them
        self.modules = [EngineModule(self._core, r) for r in range(self._core.ranks)]
        for module in self.modules:
            for p in module.parameters():
                _unwritten.fill(p)
            try:
                resolved.load_weights(module, weights)
            except RuntimeError as e:
                if self._core.ranks == 1:
                    raise
                raise InvalidArgumentError(
                    f"rank {module.wl_engine_rank}: {e} -- with tensor_parallel_size > 1 each parameter holds this "
                    "rank's slice: model.load_state_dict(weights) or model.load_weights(weights) slice the "
                    "checkpoint's tensors, a plain param.copy_(tensor) cannot [ShapeMismatch]", "ShapeMismatch") from e
            missing = [n for n, p in module.named_parameters() if n not in module.wl_filled and _unwritten.holds(p)]
            if missing and strict:
                raise InvalidArgumentError(
                    f"{len(missing)} parameter(s) of rank {module.wl_engine_rank} were not loaded: {', '.join(missing)}"
                    " -- model.load_state_dict(weights) or model.load_weights(weights) fill every parameter from "
                    "the checkpoint's tensors (strict=False allows leaving some) [MissingParameters]",
                    "MissingParameters")

    @property
    def config(self):
        return self._core.config

    @property
    def stop_token_ids(self):
        """Where generation stops: generation_config.json's / config.json's eos_token_id, else the tokenizer's EOS."""
        return self._core.stop_token_ids

    def load_reports(self):
        return self._core.load_reports()

    def refresh(self, newer, since=None):
        """Brings the engine's parameters, every rank's, up to the checkpoint `newer` by reading only
        the tensors whose recorded sha256 differs from the checkpoint they hold (the one the LLM was
        built from or last refreshed to; `since` names it otherwise): see weightloader.refresh.
        Returns a RefreshReport whose bytes_read adds up the ranks' (`ranks`: each rank's report)."""
        if self._loaded is None:
            raise InvalidArgumentError("refresh needs an LLM built by a registry loader (by name), not a Python one",
                                       "InvalidArgument")
        name, kwargs, held = self._loaded  # held: the digests last refreshed to, or the path it was built from
        def opened(path):
            return make_path_loader(path, name, kwargs)[0].get_weights(str(path), progress=False)._source
        new = opened(newer)
        if since is not None:
            held = str(since)
        old = recorded_digests(opened(held)) if isinstance(held, str) else held
        digests = recorded_digests(new)
        changed, unrecorded = changed_tensors(new.keys(), digests, old)
        ranks = [self._core.load_rank(r, new.only(changed), False) for r in range(self._core.ranks)] if changed else []
        self._loaded = (name, kwargs, digests)
        report = {"loaded": sorted({n for r in ranks for n in r.loaded}), "bytes_read": sum(r.bytes_read for r in ranks),
                  "seconds": sum(r.seconds for r in ranks), "missing": [], "unexpected": [], "ranks": ranks}
        return refresh_report(report, changed, len(new), unrecorded)

    def generate(self, prompts, sampling_params=None, stream=None, return_logits=False):
        """prompts: a string, a list of strings, or token id lists. Returns one RequestOutput per
        prompt. stream: a callable receiving each piece of text as it is produced."""
        params = sampling_params or SamplingParams()
        single = isinstance(prompts, str) or (isinstance(prompts, list) and prompts and isinstance(prompts[0], int))
        outputs = []
        for prompt in [prompts] if single else prompts:
            sink = None if stream is None else (lambda piece: stream(piece.decode("utf-8", "replace")))
            r = self._core.generate(prompt, params.max_tokens, params.temperature, params.top_p, params.seed or 0,
                                    return_logits, sink)
            out = RequestOutput(prompt, r["prompt_token_ids"],
                                [CompletionOutput(0, r["completion"].decode("utf-8", "replace"), r["token_ids"])],
                                r["text"].decode("utf-8", "replace"), r["tokens_per_second"])
            if return_logits:
                out.logits = r["logits"]
            outputs.append(out)
        return outputs
