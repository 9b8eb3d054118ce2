"""vLLM's entry point over the C++ engine: LLM(model, weight_loader=..., weight_loader_kwargs=...)
and generate(prompts, SamplingParams(...))."""
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, TypedDict, Union

import torch

from .dtypes import _DTypeLike
from .engine_module import EngineModule as EngineModule
from .loaders import BaseWeightLoader, LoadReport, _Progress, _WeightsLike
from .refresh import RefreshReport

_Prompt = Union[str, Sequence[int]]

class _LlamaConfig(TypedDict):
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    origin: str

@dataclass
class SamplingParams:
    """vLLM's sampling parameters: temperature 0 is greedy; seed None draws one from the clock."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: Optional[int] = None

@dataclass
class CompletionOutput:
    """One completion: the generated text and its token ids."""

    index: int
    text: str
    token_ids: list[int]

@dataclass
class RequestOutput:
    """What generate returns for one prompt (vLLM's RequestOutput, plus full_text and tokens/s)."""

    prompt: object
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    full_text: str = ""
    tokens_per_second: float = 0.0
    logits: Any = field(init=False)  # set only by generate(..., return_logits=True)

    @property
    def text(self) -> str:
        """The first completion's text."""
    @property
    def token_ids(self) -> list[int]:
        """The first completion's token ids."""

class LLM:
    """LLM(model, weight_loader="auto", weight_loader_kwargs=None, dtype=None, tensor_parallel_size=1):
    a Llama-family model loaded through any loader, generating on the CPU."""

    modules: list[EngineModule]

    def __init__(self, model: Union[str, os.PathLike[str]],
                 weight_loader: Union[str, type[BaseWeightLoader], BaseWeightLoader] = "auto",
                 weight_loader_kwargs: Mapping[str, Any] | None = None, dtype: _DTypeLike | None = None,
                 tensor_parallel_size: int = 1, tokenizer: Union[str, os.PathLike[str], None] = None,
                 threads: int = 0, strict: bool = True, progress: _Progress = None,
                 load_format: Union[str, type[BaseWeightLoader], BaseWeightLoader, None] = None,
                 model_loader_extra_config: Mapping[str, Any] | None = None,
                 enable_expert_parallel: bool = False) -> None: ...
    @property
    def stop_token_ids(self) -> list[int]:
        """Where generation stops: generation_config.json's or config.json's eos_token_id, GGUF's, else
        the tokenizer's EOS (llama2.c models: BOS and EOS, as run.c)."""
    @property
    def config(self) -> _LlamaConfig:
        """The model's configuration (hidden_size, num_layers, num_heads, vocab_size, ...)."""
    def load_reports(self) -> list[LoadReport]:
        """What the load did, one report per tensor-parallel rank."""
    def refresh(self, newer: Union[str, os.PathLike[str]], since: Union[str, os.PathLike[str], None] = None) -> RefreshReport:
        """Every rank's parameters brought up to `newer`, reading only the tensors whose recorded
        sha256 changed (weightloader.refresh)."""
    def generate(self, prompts: Union[_Prompt, Sequence[_Prompt]], sampling_params: SamplingParams | None = None,
                 stream: Callable[[str], Any] | None = None, return_logits: bool = False) -> list[RequestOutput]:
        """prompts: a string, a list of strings, or token id lists. Returns one RequestOutput per
        prompt. stream: a callable receiving each piece of text as it is produced."""
