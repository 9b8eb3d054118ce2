"""Tensor-parallel load_into: the slicing rule (no processes; the C++ planner behind plan_shards),
one rank's slices read alone, and two gloo processes on 127.0.0.1 running a tensor-parallel Llama
whose logits match the single-process model's, each rank reading about half the checkpoint; a
failure on one rank (a missing file, a bad shape, a different checkpoint, a dead rank) raises on
both. Meta-named modules load their slices of Hugging Face checkpoints with name_map="auto" on 2
and 4 gloo ranks."""
import datetime
import json
import os
import pathlib
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import weightloader as wl
from weightloader.tensor_parallel import Shard, plan_shards

from make_meta_checkpoint import meta_name, to_meta_rows
from named_module import Named
from tp_llama import Config, TpLlama

TINY = "hf-tiny-random-llama-2"
# The process group's timeout: how long a rank waits for one that died or hung.
GLOO_TIMEOUT_S = 15


# --- the slicing rule -------------------------------------------------------------------------

def test_column_row_and_vocabulary_parallel_slices():
    checkpoint = {"q.weight": [8, 6], "o.weight": [6, 8], "embed.weight": [30, 6]}
    params = {"q.weight": [4, 6], "o.weight": [6, 4], "embed.weight": [15, 6]}
    assert plan_shards(params, checkpoint, 1, 2) == {
        "q.weight": [Shard("q.weight", 0, 4, 8, 0)],
        "o.weight": [Shard("o.weight", 1, 4, 8, 0)],
        "embed.weight": [Shard("embed.weight", 0, 15, 30, 0)]}


def test_same_shape_is_replicated_and_absent_names_are_left_to_the_load():
    checkpoint = {"norm.weight": [6], "o.bias": [6]}
    assert plan_shards({"norm.weight": [6], "o.bias": [6], "extra": [2]}, checkpoint, 1, 2) == {}


def test_a_dimension_tp_size_does_not_divide_is_an_error_saying_splits_are_even():
    with pytest.raises(wl.InvalidArgumentError, match=r"'embed.weight'.*3000 rows, which tp_size=7 does not divide") as e:
        plan_shards({"embed.weight": [428, 16]}, {"embed.weight": [3000, 16]}, 0, 7)
    assert e.value.code == "ShapeMismatch" and "even" in str(e.value)
    with pytest.raises(wl.InvalidArgumentError, match=r"'o.weight'.*dim 1 has 9, which tp_size=2 does not divide"):
        plan_shards({"o.weight": [8, 4]}, {"o.weight": [8, 9]}, 0, 2)


def test_a_slice_that_is_no_rank_slice_names_the_parameter_and_shapes():
    with pytest.raises(wl.InvalidArgumentError, match=r"'w'.*\[4, 4\] on this rank, \[8, 8\] in the checkpoint"):
        plan_shards({"w": [4, 4]}, {"w": [8, 8]}, 0, 2)
    with pytest.raises(wl.InvalidArgumentError, match=r"'w'.*a rank holds 4 .* not 2"):
        plan_shards({"w": [2, 8]}, {"w": [8, 8]}, 0, 2)
    with pytest.raises(wl.InvalidArgumentError, match=r"'w'.*dim 0 is larger on this rank than in the checkpoint"):
        plan_shards({"w": [9, 8]}, {"w": [8, 8]}, 0, 2)


def test_shard_dims_decides_and_patterns_that_disagree_are_an_ambiguity_naming_the_dims():
    checkpoint, params = {"a.o_proj.weight": [8, 8]}, {"a.o_proj.weight": [8, 4]}
    assert plan_shards(params, checkpoint, 0, 2, shard_dims={"*.o_proj.weight": 1}) == {
        "a.o_proj.weight": [Shard("a.o_proj.weight", 1, 0, 4, 0)]}
    assert plan_shards(params, checkpoint, 0, 2, shard_dims={r"a\.o_proj\..*": 1})  # a regular expression
    with pytest.raises(wl.InvalidArgumentError, match=r"'a.o_proj.weight'.*shard_dims makes it replicated"):
        plan_shards(params, checkpoint, 0, 2, shard_dims={"*o_proj*": None})
    with pytest.raises(wl.InvalidArgumentError, match=r"'a.o_proj.weight'.*only dim 0 \(from shard_dims\) may differ"):
        plan_shards(params, checkpoint, 0, 2, shard_dims={"*.o_proj.weight": 0})
    with pytest.raises(wl.InvalidArgumentError, match=r"'n'.*shard_dims splits dim 0, but this rank holds all of it"):
        plan_shards({"n": [8]}, {"n": [8]}, 0, 2, shard_dims={"n": 0})
    with pytest.raises(wl.InvalidArgumentError, match=r"'a.o_proj.weight': .*ambiguous.*dims \[0, 1\]"):
        plan_shards(params, checkpoint, 0, 2, shard_dims={"*.weight": 0, "a.*": 1})
    with pytest.raises(wl.InvalidArgumentError, match=r"ambiguous.*dims \[None, 1\] \(None: replicated\)"):
        plan_shards(params, checkpoint, 0, 2, shard_dims={"*.weight": None, "a.*": 1})


def test_fused_parts_land_at_their_row_offsets():
    checkpoint = {f"l.attn.{p}_proj.weight": [8, 8] for p in "qkv"}
    checkpoint.update({"l.mlp.gate_proj.weight": [16, 8], "l.mlp.up_proj.weight": [16, 8]})
    params = {"l.attn.qkv_proj.weight": [12, 8], "l.mlp.gate_up_proj.weight": [16, 8]}
    assert plan_shards(params, checkpoint, 1, 2) == {
        "l.attn.qkv_proj.weight": [Shard("l.attn.q_proj.weight", 0, 4, 8, 0), Shard("l.attn.k_proj.weight", 0, 4, 8, 4),
                                   Shard("l.attn.v_proj.weight", 0, 4, 8, 8)],
        "l.mlp.gate_up_proj.weight": [Shard("l.mlp.gate_proj.weight", 0, 8, 16, 0),
                                      Shard("l.mlp.up_proj.weight", 0, 8, 16, 8)]}
    assert plan_shards(params, checkpoint, 1, 2, fused={}) == {}  # no fusion: left to the load (missing)
    custom = plan_shards({"l.attn.kv.weight": [8, 8]}, checkpoint, 0, 2, fused={"kv": ["k_proj", "v_proj"]})
    assert custom == {"l.attn.kv.weight": [Shard("l.attn.k_proj.weight", 0, 0, 4, 0), Shard("l.attn.v_proj.weight", 0, 0, 4, 4)]}


def test_gqa_kv_heads_split_or_replicated_as_vllm_does():
    # 4 query heads, 2 kv heads, head_dim 2: q is 8 rows, k and v 4.
    checkpoint = {"q_proj": [8, 8], "k_proj": [4, 8], "v_proj": [4, 8]}
    two = plan_shards({"qkv_proj": [8, 8]}, checkpoint, 1, 2)["qkv_proj"]
    assert two == [Shard("q_proj", 0, 4, 8, 0), Shard("k_proj", 0, 2, 4, 4), Shard("v_proj", 0, 2, 4, 6)]
    # 4 ranks, 2 kv heads: each kv head on two consecutive ranks (kv_head0 = q_head0 / group).
    for rank, kv_begin in enumerate([0, 0, 2, 2]):
        assert plan_shards({"qkv_proj": [6, 8]}, checkpoint, rank, 4)["qkv_proj"] == [
            Shard("q_proj", 0, 2 * rank, 2 * rank + 2, 0), Shard("k_proj", 0, kv_begin, kv_begin + 2, 2),
            Shard("v_proj", 0, kv_begin, kv_begin + 2, 4)]
    # One kv head (MQA): every rank holds all of it.
    mqa = {"q_proj": [8, 8], "k_proj": [2, 8], "v_proj": [2, 8]}
    assert plan_shards({"qkv_proj": [8, 8]}, mqa, 1, 2)["qkv_proj"] == [
        Shard("q_proj", 0, 4, 8, 0), Shard("k_proj", 0, 0, 2, 4), Shard("v_proj", 0, 0, 2, 6)]
    with pytest.raises(wl.InvalidArgumentError, match=r"'qkv_proj'.*part 'q_proj' has 8 rows, which tp_size=3"):
        plan_shards({"qkv_proj": [4, 8]}, checkpoint, 0, 3)


def test_a_bad_rank_or_size_is_an_error():
    with pytest.raises(wl.InvalidArgumentError, match=r"tp_rank must be in \[0, 2\)"):
        plan_shards({}, {}, 2, 2)
    with pytest.raises(wl.InvalidArgumentError, match="tp_size must be a positive integer"):
        plan_shards({}, {}, 0, 0)


# --- one rank, no processes ------------------------------------------------------------------

def tiny_config(testdata):
    return Config.from_hf(json.loads((testdata / TINY / "config.json").read_text()))


def test_one_rank_holds_its_slices_and_reads_only_their_bytes(testdata):
    c = tiny_config(testdata)
    full = wl.load_file(testdata / TINY / "model.safetensors")
    rank1 = TpLlama(c, rank=1, size=2)
    result = wl.load_into(rank1, testdata / TINY, tp_rank=1, tp_size=2, io="pread")
    assert result == ([], []) and result.report.tp_rank == 1 and result.report.tp_size == 2
    sd = rank1.state_dict()
    q, kv, ff, v = c.dim // 2, c.dim // 2, c.hidden // 2, c.vocab // 2
    attn, mlp = "model.layers.0.self_attn.", "model.layers.0.mlp."
    want_qkv = torch.cat([full[attn + f"{p}_proj.weight"][r:r + n] for p, r, n in (("q", q, q), ("k", kv, kv), ("v", kv, kv))])
    assert torch.equal(sd[attn + "qkv_proj.weight"], want_qkv.float())
    assert torch.equal(sd[attn + "o_proj.weight"], full[attn + "o_proj.weight"][:, q:].float())
    assert torch.equal(sd[mlp + "gate_up_proj.weight"],
                      torch.cat([full[mlp + "gate_proj.weight"][ff:], full[mlp + "up_proj.weight"][ff:]]).float())
    assert torch.equal(sd["model.embed_tokens.weight"], full["model.embed_tokens.weight"][v:].float())
    assert torch.equal(sd["model.norm.weight"], full["model.norm.weight"].float())
    norms = sum(t.numel() * t.element_size() for n, t in full.items() if "norm" in n)
    total = sum(t.numel() * t.element_size() for t in full.values())
    assert result.report.bytes_read == (total - norms) // 2 + norms


def test_slices_are_planned_on_names_after_the_name_mapping(testdata):
    c = tiny_config(testdata)
    outer = torch.nn.Module()
    outer.m = TpLlama(c, rank=0, size=2)
    result = wl.load_into(outer, testdata / TINY, tp_rank=0, tp_size=2,
                          name_map={"model.": "m.model.", "lm_head.weight": "m.lm_head.weight"})
    assert result == ([], [])
    full = wl.load_file(testdata / TINY / "model.safetensors")
    assert torch.equal(outer.m.lm_head.weight, full["lm_head.weight"][:c.vocab // 2].float())


@pytest.mark.parametrize("fused", [True, False])
def test_a_meta_checkpoint_fills_hf_named_rank_modules_with_name_map_auto(testdata, tmp_path, fused):
    # Meta's names and interleaved q/k rows (torch.save), planned in the module's names: each rank
    # holds what the same rank loads from the Hugging Face original without any mapping.
    c = tiny_config(testdata)
    state = {}
    for name, t in wl.load_file(testdata / TINY / "model.safetensors").items():
        state[meta_name(name)] = to_meta_rows(t, c.heads) if name.endswith(("q_proj.weight", "k_proj.weight")) else t
    torch.save(state, tmp_path / "consolidated.pth")
    (tmp_path / "config.json").write_text((testdata / TINY / "config.json").read_text())  # the head counts
    for rank in range(2):
        want, got = TpLlama(c, rank=rank, size=2, fused=fused), TpLlama(c, rank=rank, size=2, fused=fused)
        wl.load_into(want, testdata / TINY, tp_rank=rank, tp_size=2)
        result = wl.load_into(got, tmp_path / "consolidated.pth", loader="local", file_pattern="*.pth", name_map="auto",
                              tp_rank=rank, tp_size=2)
        assert result == ([], []) and result.report.names["from"] == "meta"
        for (name, a), b in zip(want.state_dict().items(), got.state_dict().values()):
            assert torch.equal(a, b), (name, rank)


def test_mirror_lists_the_checkpoint_names_and_shapes(testdata):
    loader = wl.HfWeightLoader()
    mirrored = {name: shape for name, _, shape in loader.mirror(loader.get_weights(testdata / TINY))}
    assert mirrored["model.embed_tokens.weight"] == [3000, 16] and len(mirrored) == 21


def test_without_tp_arguments_nothing_changes_and_the_report_is_there(testdata):
    c = tiny_config(testdata)
    model = TpLlama(c, fused=False)
    result = wl.load_into(model, testdata / TINY)
    assert result == ([], []) and result.missing_keys == [] and result.report.tp_size == 1
    assert result.report.bytes_read == (testdata / TINY / "model.safetensors").stat().st_size - 8 - \
        int.from_bytes((testdata / TINY / "model.safetensors").read_bytes()[:8], "little")


def test_rank_and_size_come_from_torch_distributed_and_explicit_arguments_win(testdata):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    try:
        c = tiny_config(testdata)
        assert wl.load_into(TpLlama(c, fused=False), testdata / TINY).report.tp_size == 1  # the world's size
        report = wl.load_into(TpLlama(c, rank=1, size=2), testdata / TINY, tp_rank=1, tp_size=2).report
        assert (report.tp_rank, report.tp_size) == (1, 2)
        alone = dist.new_group([0])
        assert wl.load_into(TpLlama(c, fused=False), testdata / TINY, tp_group=alone).report.tp_size == 1
    finally:
        dist.destroy_process_group()


def test_a_loader_that_overrides_load_weights_cannot_take_slices(testdata):
    class Own(wl.HfWeightLoader):
        def load_weights(self, model, weights, strict=None, progress=None):
            return super().load_weights(model, weights, strict, progress)

    with pytest.raises(wl.InvalidArgumentError, match="Own overrides load_weights"):
        wl.load_into(TpLlama(tiny_config(testdata), rank=0, size=2), testdata / TINY, loader=Own(), tp_rank=0, tp_size=2)


# --- two processes over gloo on 127.0.0.1 -----------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _untouched(model):
    return all(torch.isnan(p).all().item() for p in model.parameters())


def _config(s):
    return Config(**s["config"]) if "config" in s else Config.from_hf(json.loads(pathlib.Path(s["config_file"]).read_text()))


def _run_scenario(rank, size, s, work):
    """One load_into on this rank, as the scenario `s` describes it; what happened, as JSON."""
    if s.get("meta"):
        return _run_meta_scenario(rank, size, s, work)
    c = _config(s)
    model = TpLlama(c, rank=rank, size=size)
    if s.get("bad_norm_on") == rank:
        model.model.norm.weight = torch.nn.Parameter(torch.full((c.dim + 1,), float("nan")))
    out = {}
    try:
        result = wl.load_into(model, s["paths"][rank], io="pread")
        out["bytes_read"] = result.report.bytes_read
    except wl.Error as e:
        out.update(error=str(e), code=e.code, untouched=_untouched(model))
        return out
    reference = TpLlama(c, fused=False)
    wl.load_into(reference, s["paths"][rank], tp_rank=0, tp_size=1)
    with torch.no_grad():
        for ids in s["inputs"]:
            got, want = model(torch.tensor(ids)), reference(torch.tensor(ids))
            out.setdefault("max_diff", []).append((got - want).abs().max().item())
            out.setdefault("reference_last", []).append(want[-1].tolist())
    return out


def _rank_main(rank, size, port, work, scenarios):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=GLOO_TIMEOUT_S))
    results = {}
    for s in scenarios:
        if s.get("dies") == rank:
            results[s["name"]] = {"died": True}
            (work / f"rank{rank}.json").write_text(json.dumps(results))
            os._exit(0)
        results[s["name"]] = _run_scenario(rank, size, s, work)
    (work / f"rank{rank}.json").write_text(json.dumps(results))
    os._exit(0)  # a peer may be gone: no teardown collective


def _random_llama(c, seed):
    """A random Llama's tensors under Hugging Face's names (F32)."""
    g = torch.Generator().manual_seed(seed)
    model = TpLlama(Config(**c), fused=False)
    return {n: torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.1) + (1.0 if p.dim() == 1 else 0.0)
            for n, p in model.state_dict().items()}


def _mqa_checkpoint(path):
    """A random Llama with 4 query heads sharing 1 kv head (F32), and its config."""
    c = dict(vocab=40, dim=16, layers=2, heads=4, kv_heads=1, hidden=32)
    wl.save_file(_random_llama(c, 7), path)
    return c


def _gqa_checkpoint(directory):
    """A Hugging Face directory: a random Llama with 4 query heads and 2 kv heads (F32) and the
    config.json that gives name_map="auto" the head counts; its config."""
    c = dict(vocab=40, dim=16, layers=2, heads=4, kv_heads=2, hidden=32)
    directory.mkdir()
    wl.save_file(_random_llama(c, 11), directory / "model.safetensors")
    (directory / "config.json").write_text(json.dumps({
        "model_type": "llama", "vocab_size": c["vocab"], "hidden_size": c["dim"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"], "intermediate_size": c["hidden"]}))
    return c


# --- Meta-named modules from Hugging Face checkpoints, name_map="auto" --------------------------


def _kv_heads_on_a_rank(c, size):
    return c.kv_heads // size if c.kv_heads >= size else 1


def meta_module(c, size=1):
    """A Llama under Meta's names as each of `size` ranks holds it (Megatron's splits; kv heads
    replicated when ranks outnumber them)."""
    hd, ff, vocab = c.head_dim, c.hidden // size, c.vocab // size
    q, kv = c.heads // size * hd, _kv_heads_on_a_rank(c, size) * hd
    shapes = {"tok_embeddings.weight": [vocab, c.dim], "norm.weight": [c.dim], "output.weight": [vocab, c.dim]}
    for layer in range(c.layers):
        at = f"layers.{layer}."
        shapes.update({at + "attention_norm.weight": [c.dim], at + "ffn_norm.weight": [c.dim],
                       at + "attention.wq.weight": [q, c.dim], at + "attention.wk.weight": [kv, c.dim],
                       at + "attention.wv.weight": [kv, c.dim], at + "attention.wo.weight": [c.dim, q],
                       at + "feed_forward.w1.weight": [ff, c.dim], at + "feed_forward.w3.weight": [ff, c.dim],
                       at + "feed_forward.w2.weight": [c.dim, ff]})
    return Named(shapes, fill=float("nan"))


def rank_slice(name, whole, c, rank, size):
    """Rank `rank`'s part of the single-process tensor `whole`, written out here from the
    conventions (not from the planner): row-parallel wo/w2 by columns, the others by rows, a kv
    head shared by the ranks whose query heads read it."""
    if whole.dim() == 1:
        return whole
    if name.endswith(("attention.wo.weight", "feed_forward.w2.weight")):
        return whole.chunk(size, 1)[rank]
    if name.endswith(("attention.wk.weight", "attention.wv.weight")) and c.kv_heads < size:
        kv_head = rank * (c.heads // size) // (c.heads // c.kv_heads)
        return whole[kv_head * c.head_dim:(kv_head + 1) * c.head_dim]
    return whole.chunk(size, 0)[rank]


def _run_meta_scenario(rank, size, s, work):
    """A Meta-named rank module filled with name_map="auto"; its tensors saved for the test to compare."""
    model = meta_module(_config(s), size)
    try:
        result = wl.load_into(model, s["paths"][rank], name_map="auto", io="pread")
    except wl.Error as e:
        return {"error": str(e), "code": e.code}
    torch.save(model.state_dict(), work / f"{s['name']}-{size}-rank{rank}.pt")
    return {"keys": [result.missing_keys, result.unexpected_keys], "bytes_read": result.report.bytes_read}


def _spawn(size, work, scenarios):
    """Runs `scenarios` on `size` gloo ranks (one start-up, ~1 s a rank); {scenario: [each rank's outcome]}."""
    ctx = mp.start_processes(_rank_main, args=(size, _free_port(), work, scenarios), nprocs=size, join=False,
                             start_method="spawn")
    for _ in range(12):  # a hang is the failure this guards against: give up after two minutes
        if ctx.join(timeout=10):
            break
    else:
        for p in ctx.processes:
            p.kill()
        pytest.fail(f"the {size} ranks did not finish within two minutes (a hang)")
    ranks = [json.loads((work / f"rank{r}.json").read_text()) for r in range(size)]
    return {s["name"]: [ranks[r][s["name"]] for r in range(size)] for s in scenarios}


def _meta_scenarios(testdata, work):
    """A Meta-named module from the tiny HF Llama (4 heads, 4 kv heads, BF16) and from a GQA one."""
    gqa = work / "gqa"
    if not gqa.exists():
        _gqa_checkpoint(gqa)
    tiny = str(testdata / TINY)
    return [{"name": "meta_tiny", "meta": True, "config_file": str(testdata / TINY / "config.json"), "paths": [tiny] * 4},
            {"name": "meta_gqa", "meta": True, "config_file": str(gqa / "config.json"), "paths": [str(gqa)] * 4}]


@pytest.fixture(scope="module")
def tp_work(tmp_path_factory):
    return tmp_path_factory.mktemp("tp")


@pytest.fixture(scope="module")
def two_ranks(tp_work, testdata):
    """Runs every two-process scenario in one gloo group; returns ({scenario: [rank 0's outcome,
    rank 1's]}, the corpus cases)."""
    work = tp_work / "two"
    work.mkdir()
    tiny = str(testdata / TINY)
    cases = json.loads((testdata / TINY / "corpus.json").read_text())["model_cases"]
    f32 = work / "f32"
    f32.mkdir()
    wl.save_file({n: t.float() for n, t in wl.load_file(testdata / TINY / "model.safetensors").items()},
                 f32 / "model.safetensors")
    mqa = _mqa_checkpoint(work / "mqa.safetensors")
    corrupt = work / "corrupt"  # the same size, a header that is no JSON
    corrupt.mkdir()
    data = bytearray((testdata / TINY / "model.safetensors").read_bytes())
    data[8:12] = b"\x00\xff{["
    (corrupt / "model.safetensors").write_bytes(bytes(data))
    base = {"config_file": str(testdata / TINY / "config.json"), "inputs": [c["input_ids"] for c in cases]}
    scenarios = [
        {**base, "name": "tiny", "paths": [tiny, tiny]},
        {"name": "mqa", "config": mqa, "paths": [str(work / "mqa.safetensors")] * 2, "inputs": [[3, 1, 4, 1, 5, 9, 2, 6]]},
        *_meta_scenarios(testdata, tp_work),
        {**base, "name": "missing", "paths": [tiny, str(work / "nowhere")]},
        {**base, "name": "corrupt", "paths": [tiny, str(corrupt)]},
        {**base, "name": "bad_shape", "paths": [tiny, tiny], "bad_norm_on": 1},
        {**base, "name": "both_missing", "paths": [str(work / "nowhere0"), str(work / "nowhere1")]},
        {**base, "name": "disagree", "paths": [tiny, str(f32)]},
        {**base, "name": "dead", "paths": [tiny, tiny], "dies": 1},
    ]
    return _spawn(2, work, scenarios), cases


@pytest.fixture(scope="module")
def four_ranks(tp_work, testdata):
    """The Meta-named scenarios on four gloo ranks: {scenario: [each rank's outcome]}."""
    work = tp_work / "four"
    work.mkdir()
    return _spawn(4, work, _meta_scenarios(testdata, tp_work))


@pytest.fixture(scope="module")
def four_ranks_over_http(tp_work, testdata, nginx):
    """meta_tiny on four gloo ranks from nginx: ([each rank's outcome], the requests for the file)."""
    work = tp_work / "four-http"
    work.mkdir()
    url = nginx.put("tp/tiny/model.safetensors", testdata / TINY / "model.safetensors")
    nginx.put("tp/tiny/config.json", testdata / TINY / "config.json")
    s = {"name": "meta_tiny_http", "meta": True, "config_file": str(testdata / TINY / "config.json"), "paths": [url] * 4}
    def requests(run):
        before = len(nginx.log())
        out = run()
        return out, [e for e in nginx.log()[before:] if e.path == "tp/tiny/model.safetensors"]
    c = Config.from_hf(json.loads((testdata / TINY / "config.json").read_text()))
    _, alone = requests(lambda: wl.load_into(meta_module(c), url, name_map="auto"))
    outcomes, four = requests(lambda: _spawn(4, work, [s])["meta_tiny_http"])
    return outcomes, alone, four


def test_four_ranks_over_http_make_the_header_requests_of_one_and_take_their_slices(four_ranks_over_http, tp_work, testdata):
    """Rank 0 reads the header and sends its loader choice and the catalogue as a value, with the
    file's size and ETag: the others neither detect the loader nor open the file with a request (no
    HEAD) and range over their own bytes, pinned to the ETag; each rank's tensors are its slices of
    the local load."""
    outcomes, alone, four = four_ranks_over_http
    heads = [[e.range for e in on_file if e.method == "GET" and e.range.startswith("bytes=0-")] for on_file in (alone, four)]
    assert heads[0] and heads[1] == heads[0], [(e.method, e.range) for e in four]
    assert sum(e.method == "HEAD" for e in four) == sum(e.method == "HEAD" for e in alone)  # rank 0's only
    assert all(e.if_match for e in four if e.method == "GET"), [(e.method, e.range, e.if_match) for e in four]
    c = Config.from_hf(json.loads((testdata / TINY / "config.json").read_text()))
    whole = meta_module(c)
    assert wl.load_into(whole, str(testdata / TINY), name_map="auto") == ([], [])
    want = whole.state_dict()
    for rank, out in enumerate(outcomes):
        assert out.get("keys") == [[], []], (rank, out)
        got = torch.load(tp_work / "four-http" / f"meta_tiny_http-4-rank{rank}.pt")
        for name, tensor in got.items():
            assert torch.equal(tensor, rank_slice(name, want[name], c, rank, 4)), (name, rank)


def _checkpoint_bytes(path):
    return {n: t.numel() * t.element_size() for n, t in wl.load_file(path).items()}


@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("scenario", ["meta_tiny", "meta_gqa"])
def test_meta_named_ranks_take_their_slices_of_a_hf_checkpoint_with_name_map_auto(request, tp_work, testdata, size,
                                                                                 scenario):
    outcomes = request.getfixturevalue("two_ranks")[0] if size == 2 else request.getfixturevalue("four_ranks")
    s = next(s for s in _meta_scenarios(testdata, tp_work) if s["name"] == scenario)
    c = _config(s)
    whole = meta_module(c)  # the single-process load, q/k rows in Meta's interleaved layout
    assert wl.load_into(whole, s["paths"][0], name_map="auto") == ([], [])
    hf = wl.load_file(pathlib.Path(s["paths"][0]) / "model.safetensors")
    want = whole.state_dict()
    assert torch.equal(want["layers.1.attention.wk.weight"], to_meta_rows(hf["model.layers.1.self_attn.k_proj.weight"],
                                                                         c.kv_heads).float())
    assert torch.equal(want[meta_name("model.layers.0.mlp.down_proj.weight")], hf["model.layers.0.mlp.down_proj.weight"].float())
    sizes = _checkpoint_bytes(pathlib.Path(s["paths"][0]) / "model.safetensors")
    replicated = sum(b for n, b in sizes.items() if "norm" in n or (c.kv_heads < size and ("k_proj" in n or "v_proj" in n)))
    for rank, out in enumerate(outcomes[scenario]):
        assert out.get("keys") == [[], []], (rank, out)
        got = torch.load(tp_work / ("two" if size == 2 else "four") / f"{scenario}-{size}-rank{rank}.pt")
        assert got.keys() == want.keys()
        for name, tensor in got.items():
            assert torch.equal(tensor, rank_slice(name, want[name], c, rank, size)), (name, rank, size)
        assert out["bytes_read"] <= (sum(sizes.values()) - replicated) / size * 1.05 + replicated, (rank, out["bytes_read"])


def test_two_ranks_give_the_single_process_logits_reading_half_each(two_ranks, testdata):
    outcomes, cases = two_ranks
    sizes = _checkpoint_bytes(testdata / TINY / "model.safetensors")
    replicated = sum(b for n, b in sizes.items() if "norm" in n)  # norms are whole on every rank
    for rank, out in enumerate(outcomes["tiny"]):
        assert "error" not in out, out
        assert max(out["max_diff"]) < 1e-5, (rank, out["max_diff"])
        assert out["bytes_read"] <= sum(sizes.values()) / 2 * 1.05 + replicated, (rank, out["bytes_read"])
    corpus = json.loads((testdata / TINY / "corpus.json").read_text())["logit_tolerance"]
    for case, last in zip(cases, outcomes["tiny"][0]["reference_last"]):  # the reference is transformers'
        for token, value in case["sampled_logits"].items():
            assert abs(last[int(token)] - value) <= corpus["absolute"] + corpus["relative"] * abs(value), token
        assert max(range(len(last)), key=last.__getitem__) == case["greedy_token"]


def test_two_ranks_replicate_a_single_kv_head(two_ranks):
    for out in two_ranks[0]["mqa"]:
        assert "error" not in out, out
        assert max(out["max_diff"]) < 1e-5


# The agreement is the C++ rule (wl::agree, loaders/rank_agreement.hpp): every rank raises the failed
# rank's code, "rank r of n failed <stage>: <its error>", each failed rank named.
@pytest.mark.parametrize("scenario, stage, code, cause", [
    ("missing", "opening the checkpoint", "FileNotFound", "nowhere: no such file"),
    ("corrupt", "opening the checkpoint", "InvalidHeader", "header is not valid UTF-8"),
    ("bad_shape", "loading", "ShapeMismatch", "'model.norm.weight'")])
def test_a_rank_that_fails_makes_both_raise_naming_it(two_ranks, scenario, stage, code, cause):
    for rank, out in enumerate(two_ranks[0][scenario]):
        assert out.get("code") == code, (rank, out)
        assert out["error"].startswith(f"rank 1 of 2 failed {stage}: ") and "rank 0" not in out["error"], out["error"]
        assert cause in out["error"] and out["error"].endswith(f" [{code}]"), out["error"]
        assert out["error"].count(f"[{code}]") == 1, out["error"]  # the failed rank's tag, not repeated
    if stage != "loading":
        assert two_ranks[0][scenario][0]["untouched"]  # rank 0 stopped before loading anything


def test_ranks_that_both_fail_are_each_named_with_their_cause(two_ranks):
    for out in two_ranks[0]["both_missing"]:
        assert out.get("code") == "FileNotFound", out
        assert out["error"].startswith("rank 0 of 2 failed opening the checkpoint: ") and "nowhere0" in out["error"]
        assert "; rank 1 of 2 failed opening the checkpoint: " in out["error"] and "nowhere1" in out["error"]


def test_ranks_with_different_checkpoints_both_raise_before_loading(two_ranks, testdata):
    bf16 = sum(_checkpoint_bytes(testdata / TINY / "model.safetensors").values())
    for out in two_ranks[0]["disagree"]:
        assert out.get("code") == "RanksDisagree", out
        # Each rank's checkpoint as the C++ library describes it (loaders/rank_agreement.hpp): BF16 and F32 differ.
        assert out["error"].startswith("ranks see different checkpoints (opening the checkpoint): rank 1 of 2 has "
                                       f"21 tensors ({2 * bf16} bytes) in safetensors file [model.safetensors], "
                                       "header hash "), out["error"]
        assert f"; rank 0 has 21 tensors ({bf16} bytes) in safetensors file [model.safetensors]" in out["error"]
        assert out["untouched"]


class _OneProcessRanks(wl._core.Communicator):
    """`size` ranks that all did what this one did: all_gather repeats its bytes."""

    def __init__(self, size):
        super().__init__()
        self._size = size

    def rank(self):
        return 0

    def size(self):
        return self._size

    def all_gather(self, data):
        return data * self._size

    def broadcast(self, data, root):
        return data

    def barrier(self):
        pass

    def abort(self, why):
        raise AssertionError(why)


def test_the_agreement_is_the_cpp_rule_over_a_python_communicator():
    from weightloader.tensor_parallel import _failure
    wl._core.agree(_OneProcessRanks(2), "loading", None, "same")  # all succeeded, one checkpoint: no error
    with pytest.raises(wl.Error) as e:
        wl._core.agree(_OneProcessRanks(2), "loading", _failure(ValueError("bad value")))
    assert e.value.code == "RankFailed"  # not a weightloader error: the type and its message
    assert str(e.value) == "ranks 0, 1 of 2 failed loading: ValueError: bad value [RankFailed]"
    with pytest.raises(wl.InvalidArgumentError) as e:
        wl._core.agree(_OneProcessRanks(1), "opening the checkpoint",
                       _failure(wl.errors._from_core("ShapeMismatch", "3 rows, not 4", "m.safetensors", "w")))
    assert e.value.code == "ShapeMismatch"
    assert str(e.value) == "rank 0 of 1 failed opening the checkpoint: m.safetensors: tensor 'w': 3 rows, not 4 " \
        "[ShapeMismatch]"


def test_a_rank_that_died_is_an_error_not_a_hang(two_ranks):
    survivor = two_ranks[0]["dead"][0]
    assert survivor.get("code") == "RankFailed", survivor
    assert "not every rank answered" in survivor["error"], survivor["error"]
