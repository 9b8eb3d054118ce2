"""Tensor-parallel loading: which slice of which checkpoint tensor fills each parameter of one
rank's module (Megatron's and vLLM's conventions), and the agreement between ranks that turns a
failure on one rank into the same error on every rank.

The rule, per parameter, from its shape and the checkpoint tensor's shape (after the name mapping):
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
for the parameters it matches, and a shape that does not fit it is an error. Patterns that give
one parameter different dims are ambiguous: an error naming the parameter and the dims.
"""
import fnmatch
import os
import re
from collections import namedtuple

from .errors import _from_core
from .loaders import Weights

#: vLLM's fused parameters and the checkpoint tensors they are stacked from, in row order.
VLLM_FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}

#: Rows [begin, end) of `dim` of checkpoint tensor `source`, landing at `row_offset` in the parameter.
Shard = namedtuple("Shard", ["source", "dim", "begin", "end", "row_offset"])


def _shape_error(message, name):
    return _from_core("ShapeMismatch", f"tensor-parallel load: {message}", "", name, False)


def _matches(pattern, name):
    """A shard_dims key matches a name as a glob, or as a regular expression matching all of it."""
    if fnmatch.fnmatchcase(name, pattern):
        return True
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return False


def _forced_dim(name, shard_dims):
    """(True, dim or None) when shard_dims decides for `name`, else (False, None)."""
    dims = {dim for pattern, dim in (shard_dims or {}).items() if _matches(pattern, name)}
    if len(dims) > 1:
        raise _from_core("InvalidArgument", f"tensor-parallel load: ambiguous: shard_dims "
                         f"patterns give dims {sorted(dims, key=lambda d: -1 if d is None else d)} (None: "
                         "replicated); make one pattern match it", "", name, False)
    return (True, dims.pop()) if dims else (False, None)


def _rank_rows(full, rows, rank, size, what, name):
    """Where `rows` of a `full`-row dim 0 begin on `rank`: an even split, or blocks replicated
    over consecutive ranks (kv heads when ranks outnumber them)."""
    if rows * size == full:
        return rank * rows
    if 0 < rows <= full and full % rows == 0 and size % (full // rows) == 0:
        return rank // (size // (full // rows)) * rows
    if full % size != 0:
        raise _shape_error(f"{what} has {full} rows, which tp_size={size} does not divide (splits must be even, "
                           "as in vLLM and Megatron)", name)
    raise _shape_error(f"{what} has {full} rows: a rank holds {full // size} (an even split) or a whole "
                       f"number of blocks replicated over ranks, not {rows}", name)


def _split(name, shape, tensor_shape, rank, size, forced):
    """The shards of a parameter that is one checkpoint tensor of its own name; [] for the whole tensor."""
    shape, tensor_shape = list(shape), list(tensor_shape)
    (decided, dim), described = forced, f"{shape} on this rank, {tensor_shape} in the checkpoint (tp_size={size})"
    if not decided and (shape == tensor_shape or size == 1):
        return []  # replicated; or one rank, whose shapes the load checks as always (allow_reshape included)
    if decided and dim is None:
        if shape != tensor_shape:
            raise _shape_error(f"{described}, but shard_dims makes it replicated", name)
        return []
    if len(shape) != len(tensor_shape):
        raise _shape_error(f"{described}: a rank's slice must have the checkpoint's number of dimensions", name)
    differing = [d for d in range(len(shape)) if shape[d] != tensor_shape[d]]
    if not decided:
        if len(differing) != 1:
            raise _shape_error(f"{described}: a rank's slice must differ from the checkpoint in exactly one dimension, "
                               "divided by tp_size", name)
        dim = differing[0]
    elif not 0 <= dim < len(tensor_shape):
        raise _shape_error(f"shard_dims gives dim {dim}, outside the checkpoint's shape {tensor_shape}", name)
    elif any(d != dim for d in differing):
        raise _shape_error(f"{described}: only dim {dim} (from shard_dims) may differ", name)
    full, rows = tensor_shape[dim], shape[dim]
    if rows > full:
        raise _shape_error(f"{described}: dim {dim} is larger on this rank than in the checkpoint", name)
    if rows == full and size > 1:
        raise _shape_error(f"{described}: shard_dims splits dim {dim}, but this rank holds all of it", name)
    if dim == 0:
        begin = _rank_rows(full, rows, rank, size, "dim 0", name)
    else:
        if full % size != 0:
            raise _shape_error(f"{described}: dim {dim} has {full}, which tp_size={size} does not divide "
                               "(splits must be even, as in vLLM and Megatron)", name)
        if rows * size != full:
            raise _shape_error(f"{described}: dim {dim} must hold {full // size} on each rank", name)
        begin = rank * rows
    return [Shard(name, dim, begin, begin + rows, 0)]


def _fused_parts(name, checkpoint, fused):
    """The checkpoint names a fused parameter is stacked from, or None when it is not one."""
    segments = name.split(".")
    for i, segment in enumerate(segments):
        parts = fused.get(segment)
        if parts:
            names = [".".join(segments[:i] + [part] + segments[i + 1:]) for part in parts]
            if all(n in checkpoint for n in names):
                return names
    return None


def _fuse(name, shape, parts, checkpoint, rank, size):
    """Each part's rank slice (dim 0), stacked in order into the rank's fused parameter."""
    shape = list(shape)
    full = [list(checkpoint[p]) for p in parts]
    for part, part_shape in zip(parts, full):
        if not part_shape or part_shape[1:] != shape[1:]:
            raise _shape_error(f"{shape} on this rank but part '{part}' is {part_shape}: parts stack along dim 0", name)
    totals = [s[0] for s in full]
    if shape[0] * size == sum(totals):
        rows = [t // size for t in totals]
    else:
        first = totals[0] // size
        rest, rest_total = shape[0] - first, sum(totals[1:])
        if rest <= 0 or rest_total == 0 or any(rest * t % rest_total for t in totals[1:]):
            raise _shape_error(f"{shape[0]} rows on this rank do not split into its parts' rank slices "
                               f"({', '.join(f'{p} {t}' for p, t in zip(parts, totals))} rows; tp_size={size})", name)
        rows = [first] + [rest * t // rest_total for t in totals[1:]]
    shards, offset = [], 0
    for part, total, r in zip(parts, totals, rows):
        begin = _rank_rows(total, r, rank, size, f"part '{part}'", name)
        shards.append(Shard(part, 0, begin, begin + r, offset))
        offset += r
    return shards


def plan_shards(params, checkpoint, tp_rank=0, tp_size=1, shard_dims=None, fused=None):
    """What fills each parameter of rank `tp_rank` of `tp_size`.

    params: {parameter name: shape} of the rank's module; checkpoint: {tensor name after the name
    mapping: shape}. fused: {fused name: [part names]} (default VLLM_FUSED; {} for none), applied
    where the checkpoint has every part and not the fused name itself. Returns {parameter: [Shard]}
    for parameters filled from slices or parts; the others take the whole tensor of their name (or
    are missing from the checkpoint, which the load reports)."""
    if not isinstance(tp_size, int) or tp_size < 1:
        raise _from_core("InvalidArgument", f"tp_size must be a positive integer, not {tp_size!r}", "", "", False)
    if not isinstance(tp_rank, int) or not 0 <= tp_rank < tp_size:
        raise _from_core("InvalidArgument", f"tp_rank must be in [0, {tp_size}), not {tp_rank!r}", "", "", False)
    fused = VLLM_FUSED if fused is None else fused
    out = {}
    for name, shape in params.items():
        if name in checkpoint:
            shards = _split(name, shape, checkpoint[name], tp_rank, tp_size, _forced_dim(name, shard_dims))
        else:
            parts = _fused_parts(name, checkpoint, fused)
            shards = _fuse(name, shape, parts, checkpoint, tp_rank, tp_size) if parts else []
        if shards:
            out[name] = shards
    return out


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
        plan_shards({}, {}, self.rank, self.size)  # checks them

    def agreement(self, stage):
        """with ranks.agreement("loading") as step: ... — on leaving, every rank learns whether each
        rank's block raised; any failure raises RankFailed on all of them, naming the failed ranks
        and their errors. step.payload (set inside) comes back as step.gathered, one per rank."""
        return _Agreement(self, stage)

    def check_same_checkpoint(self, fingerprints):
        """RanksDisagree on every rank when the ranks' checkpoints differ in files or sizes."""
        if all(f == fingerprints[0] for f in fingerprints):
            return
        def files(f):
            return ", ".join(f"{n} ({s} bytes)" for n, s in f) if f is not None else "tensors from a Python loader"
        listed = "; ".join(f"rank {r}: {files(f)}" for r, f in enumerate(fingerprints))
        raise _from_core("RanksDisagree", f"tensor-parallel ranks opened different checkpoints (files and sizes): {listed}",
                         "", "", False)


class _Agreement:
    def __init__(self, ranks, stage):
        self.ranks, self.stage, self.payload, self.gathered = ranks, stage, None, None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        ranks = self.ranks
        if ranks.dist is None:
            self.gathered = [self.payload]
            return False
        mine = (ranks.rank, None if error is None else _describe(error), self.payload)
        everyone = [None] * ranks.dist.get_world_size(ranks.group)
        try:
            ranks.dist.all_gather_object(everyone, mine, group=ranks.group)
        except RuntimeError as e:  # a peer died or hung past the process group's timeout
            raise _from_core("RankFailed", f"tensor-parallel load, {self.stage}: not every rank answered within the "
                             f"process group's timeout (a rank died or hung): {e}", "", "", False) from error
        if error is not None and not isinstance(error, Exception):
            return False  # Ctrl-C or exit: the others now know; this rank goes on stopping as asked
        failed = [(rank, message) for rank, message, _ in everyone if message is not None]
        if len(failed) == 1:
            raise _from_core("RankFailed", f"tensor-parallel load, {self.stage}, failed on rank {failed[0][0]}: "
                             f"{failed[0][1]}", "", "", False) from error
        if failed:
            raise _from_core("RankFailed", f"tensor-parallel load, {self.stage}, failed on ranks "
                             f"{', '.join(str(r) for r, _ in failed)}: "
                             f"{'; '.join(f'rank {r}: {m}' for r, m in failed)}", "", "", False) from error
        self.gathered = [payload for _, _, payload in everyone]
        return False


def _describe(error):
    return str(error) if hasattr(error, "code") else f"{type(error).__name__}: {error}"


def fingerprint(weights):
    """(file name, size) of each file a checkpoint's tensors come from: what ranks compare before
    loading (names without directories, so ranks may hold their copies in different places)."""
    if not isinstance(weights, Weights):
        return None  # a Python loader's tensors: an iterable may be read only once
    files = {weights.info(name)["file"] for name in weights}
    return sorted((os.path.basename(f), os.path.getsize(f) if os.path.isfile(f) else None) for f in files)
