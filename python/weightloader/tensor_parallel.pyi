"""Tensor-parallel loading: which slice of which checkpoint tensor fills each parameter of one
rank's module (Megatron's and vLLM's conventions), and the agreement between ranks that turns a
failure on one rank into the same error on every rank."""
from types import TracebackType
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from .loaders import _WeightsLike

VLLM_FUSED: dict[str, tuple[str, ...]]
"""vLLM's fused parameters and the checkpoint tensors they are stacked from, in row order."""

class Shard(NamedTuple):
    """Rows [begin, end) of `dim` of checkpoint tensor `source`, landing at `row_offset` in the parameter."""

    source: str
    dim: int
    begin: int
    end: int
    row_offset: int

def plan_shards(params: Mapping[str, Sequence[int]], checkpoint: Mapping[str, Sequence[int]], tp_rank: int = 0,
                tp_size: int = 1, shard_dims: Mapping[str, int | None] | None = None,
                fused: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[Shard]]:
    """What fills each parameter of rank `tp_rank` of `tp_size`: {parameter: [Shard]} for those filled
    from slices or parts; the others take the whole tensor of their name."""

def plan_module_shards(loader: Any, weights: _WeightsLike, tensors: Sequence[tuple[str, str, list[int], int, int]],
                       tp_rank: int = 0, tp_size: int = 1, shard_dims: Mapping[str, int | None] | None = None,
                       fused: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[Shard]]:
    """plan_shards for a module's tensors against `weights` under the names the registry loader's
    whole name mapping (name_map="auto" included) gives them for this module."""

class _Agreement:
    checkpoint: str  # this rank's description of the checkpoint it opened ("": nothing to compare)
    def __enter__(self) -> _Agreement: ...
    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool: ...

class Ranks:
    """The ranks loading together: this one's place, and the agreement steps every rank takes."""

    rank: int
    size: int
    group: Any
    dist: Any
    def __init__(self, tp_rank: int | None = None, tp_size: int | None = None, group: Any = None) -> None: ...
    def agreement(self, stage: str) -> _Agreement:
        """A block whose failure on any rank raises on every rank, by the C++ rule (wl::agree): the failed
        rank's code, "rank r of n failed <stage>: ..."; RanksDisagree when the ranks' checkpoints differ."""

def open_weights(make_loader: Callable[[tuple[str, dict[str, Any]] | None], tuple[Any, tuple[str, dict[str, Any]] | None]], path: str, ranks: Ranks) -> tuple[Any, _WeightsLike]:
    """(make_loader(choice)[0], its weights of path), the headers read by rank 0 alone and sent, with its loader choice,
    to the ranks given the same path."""

def fingerprint(weights: _WeightsLike) -> str:
    """The C++ library's description of the checkpoint that ranks compare ("tensors from a Python loader" for those)."""
