"""Tensor-parallel loading: which slice of which checkpoint tensor fills each parameter of one
rank's module (Megatron's and vLLM's conventions), and the agreement between ranks that turns a
failure on one rank into the same error on every rank.

The C++ library plans the slices (src/loaders/rank_shards.hpp), per parameter, from its shape and
the checkpoint tensor's shape (after the name mapping):
- same shape: replicated, the whole tensor (norms, row-parallel biases, a replicated embedding);
- the checkpoint's shape with exactly one dimension divided by tp_size: the rank's slice along that
  dimension (column-parallel q/k/v, gate/up and a vocabulary-parallel embedding or lm_head: dim 0;
  row-parallel o_proj/down_proj: dim 1). As in vLLM and Megatron the split must be even: a
  dimension that tp_size does not divide is an error, never a ragged split;
- along dim 0, fewer rows than an even split but a whole number of blocks of them, each block
  shared by tp_size / blocks consecutive ranks: how vLLM replicates kv heads when ranks outnumber them;
- a fused parameter (vLLM's qkv_proj from q_proj, k_proj, v_proj; gate_up_proj from gate_proj,
  up_proj) takes each part's rank slice at its row offset. The first part splits evenly; the others
  share the remaining rows in proportion to their sizes (GQA: k and v get the rank's kv heads).
Shapes alone never point at two dims (the divided one is the one where they differ), so the rule
needs no hint; `shard_dims` ({name glob or regex: dim, or None for replicated}) states the intent
for the parameters it matches, and a shape that does not fit it is an error. A pattern is a glob
(fnmatch's, backslashes literal) or an ECMAScript regular expression matching the whole name (the
dialect of the regex_rename kwarg). Patterns that give one parameter different dims are ambiguous:
an error naming the parameter and the dims.
"""
from collections import namedtuple

from . import _core
from ._communicator import TorchCommunicator
from .errors import Error
from .loaders import CoreWeightLoader, Weights

#: vLLM's fused parameters and the checkpoint tensors they are stacked from, in row order.
VLLM_FUSED = {name: tuple(parts) for name, parts in _core.vllm_fused().items()}

#: Rows [begin, end) of `dim` of checkpoint tensor `source`, landing at `row_offset` in the parameter.
Shard = namedtuple("Shard", ["source", "dim", "begin", "end", "row_offset"])


def _shards(planned):
    return {name: [Shard(*s) for s in shards] for name, shards in planned.items()}


def plan_shards(params, checkpoint, tp_rank=0, tp_size=1, shard_dims=None, fused=None):
    """What fills each parameter of rank `tp_rank` of `tp_size`.

    params: {parameter name: shape} of the rank's module; checkpoint: {tensor name after the name
    mapping: shape}. fused: {fused name: [part names]} (default VLLM_FUSED; {} for none), applied
    where the checkpoint has every part and not the fused name itself. Returns {parameter: [Shard]}
    for parameters filled from slices or parts; the others take the whole tensor of their name (or
    are missing from the checkpoint, which the load reports)."""
    return _shards(_core.plan_shards([(name, list(shape)) for name, shape in params.items()],
                                     {name: list(shape) for name, shape in checkpoint.items()}, tp_rank, tp_size,
                                     list((shard_dims or {}).items()), fused))


def plan_module_shards(loader, weights, tensors, tp_rank=0, tp_size=1, shard_dims=None, fused=None):
    """plan_shards for a module's tensors (name, dtype, shape, data pointer, bytes: what
    load_weights passes) against `weights` under the names that the registry `loader`'s whole name
    mapping (name_map="auto" included) gives them for this module: the plan is made in the
    module's names, and its shards name the tensors as that loader's load_weights finds them."""
    return _shards(loader._core.rank_shards(weights._source, tensors, tp_rank, tp_size,
                                            list((shard_dims or {}).items()), fused))


class Ranks:
    """The ranks loading together: this one's place, and (when torch.distributed is initialised)
    the agreement steps every rank takes in the same order, failed or not."""

    def __init__(self, tp_rank=None, tp_size=None, group=None):
        self.dist = None
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                self.dist = dist
        except ImportError:
            pass
        self.group = group
        self.rank = tp_rank if tp_rank is not None else (self.dist.get_rank(group) if self.dist else 0)
        self.size = tp_size if tp_size is not None else (self.dist.get_world_size(group) if self.dist else 1)
        _core.check_rank(self.rank, self.size)

    def agreement(self, stage):
        """with ranks.agreement("loading") as step: ... — on leaving, every rank learns whether each
        rank's block raised, by the C++ rule (wl::agree, loaders/rank_agreement.hpp): a failure
        anywhere raises on every rank the failed rank's code with "rank r of n failed <stage>: ..."
        naming each failed rank; then, when step.checkpoint was set (the ranks' descriptions of the
        checkpoint they opened), RanksDisagree when a rank's differs from rank 0's. An exception that
        is not a weightloader error counts as RankFailed, "TypeName: message"."""
        return _Agreement(self, stage)


class _Agreement:
    def __init__(self, ranks, stage):
        self.ranks, self.stage, self.checkpoint = ranks, stage, ""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        ranks = self.ranks
        if ranks.dist is None:
            return False
        failure = None if error is None else _failure(error)
        try:
            _core.agree(TorchCommunicator(ranks.dist, ranks.group, self.stage), self.stage, failure, self.checkpoint)
        except Error as agreed:
            if error is not None and not isinstance(error, Exception):
                return False  # Ctrl-C or exit: the others now know; this rank goes on stopping as asked
            raise agreed from error
        return False


def _failure(error):
    """(code, message) of this rank's error for the agreement: a weightloader error's own (its text
    without the " [Code]" the agreed error adds again), RankFailed and "TypeName: message" for others."""
    if isinstance(error, Error):
        text, tag = str(error), f" [{error.code}]"
        return error.code, text[:-len(tag)] if text.endswith(tag) else text
    return "RankFailed", f"{type(error).__name__}: {error}"


def open_weights(make_loader, path, ranks):
    """(loader, loader.get_weights(path)) with loader = make_loader(choice)[0], the checkpoint read
    once for the group: under torch.distributed rank 0 reads the headers and sends its loader choice
    and catalogue as a value (C++'s share_catalogue: files with their sizes and ETags, tensors,
    decoders); the ranks given the same path take them and open only the bytes they load, with no
    request to detect the loader or open the files. The others (another path, a model id each node
    resolves itself, a Python loader) read their own. Every rank takes part in the broadcast,
    whatever failed before it. make_loader(choice) returns (loader, (name, kwargs) it detected or
    None); `choice` is such a pair that another rank detected, or None."""
    if ranks.dist is None or ranks.size == 1:
        loader, _ = make_loader(None)
        return loader, loader.get_weights(path)
    root = 0 if ranks.group is None else ranks.dist.distributed_c10d._get_global_rank(ranks.group, 0)
    shared = [""]
    if ranks.dist.get_rank(ranks.group) == 0:
        try:
            loader, detected = make_loader(None)
            weights = loader.get_weights(path)
            if isinstance(loader, CoreWeightLoader):
                kwargs = {k: v for k, v in (detected[1] if detected else {}).items() if isinstance(v, str)}
                shared[0] = _core.share_catalogue(loader.loader_name, weights._source, path, kwargs)
        finally:
            ranks.dist.broadcast_object_list(shared, src=root, group=ranks.group)
        return loader, weights
    ranks.dist.broadcast_object_list(shared, src=root, group=ranks.group)
    received = _core.shared_catalogue(shared[0], path)
    loader, _ = make_loader(received[:2] if received else None)
    if received is None or not isinstance(loader, CoreWeightLoader):
        return loader, loader.get_weights(path)
    return loader, Weights(received[2], loader._core.dtype)


def fingerprint(weights):
    """What ranks compare before loading: the C++ library's description of the checkpoint (format,
    metadata, and per tensor its name, stored type, shape, file name without directories, offset
    and size, with a hash of all of it), as MPI ranks compare it; for a Python loader's tensors (an
    iterable may be read only once) only that they are such."""
    return _core.describe_checkpoint(weights._source) if isinstance(weights, Weights) else "tensors from a Python loader"
