"""Tensor-parallel load_into: the slicing rule (no processes), one rank's slices read alone, and
two gloo processes on 127.0.0.1 running a tensor-parallel Llama whose logits match the
single-process model's, each rank reading about half the checkpoint; a failure on one rank (a
missing file, a bad shape, a different checkpoint, a dead rank) raises on both."""
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


def _run_scenario(rank, size, s):
    """One load_into on this rank, as the scenario `s` describes it; what happened, as JSON."""
    c = Config(**s["config"]) if "config" in s else Config.from_hf(json.loads(pathlib.Path(s["config_file"]).read_text()))
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
        results[s["name"]] = _run_scenario(rank, size, s)
    (work / f"rank{rank}.json").write_text(json.dumps(results))
    os._exit(0)  # a peer may be gone: no teardown collective


def _mqa_checkpoint(path):
    """A random Llama with 4 query heads sharing 1 kv head (F32), and its config."""
    c = dict(vocab=40, dim=16, layers=2, heads=4, kv_heads=1, hidden=32)
    g = torch.Generator().manual_seed(7)
    model = TpLlama(Config(**c), fused=False)
    tensors = {n: torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.1) + (1.0 if p.dim() == 1 else 0.0)
               for n, p in model.state_dict().items()}
    wl.save_file(tensors, path)
    return c


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory, testdata):
    """Runs every two-process scenario in one gloo group (start-up costs ~1 s each time); returns
    {scenario: [rank 0's outcome, rank 1's]}."""
    work = tmp_path_factory.mktemp("tp")
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
        {**base, "name": "missing", "paths": [tiny, str(work / "nowhere")]},
        {**base, "name": "corrupt", "paths": [tiny, str(corrupt)]},
        {**base, "name": "bad_shape", "paths": [tiny, tiny], "bad_norm_on": 1},
        {**base, "name": "both_missing", "paths": [str(work / "nowhere0"), str(work / "nowhere1")]},
        {**base, "name": "disagree", "paths": [tiny, str(f32)]},
        {**base, "name": "dead", "paths": [tiny, tiny], "dies": 1},
    ]
    ctx = mp.start_processes(_rank_main, args=(2, _free_port(), work, scenarios), nprocs=2, join=False,
                             start_method="spawn")
    for _ in range(12):  # a hang is the failure this guards against: give up after two minutes
        if ctx.join(timeout=10):
            break
    else:
        for p in ctx.processes:
            p.kill()
        pytest.fail("the two ranks did not finish within two minutes (a hang)")
    ranks = [json.loads((work / f"rank{r}.json").read_text()) for r in range(2)]
    return {s["name"]: [ranks[0][s["name"]], ranks[1][s["name"]]] for s in scenarios}, cases


def _checkpoint_bytes(path):
    return {n: t.numel() * t.element_size() for n, t in wl.load_file(path).items()}


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


@pytest.mark.parametrize("scenario, stage, cause", [
    ("missing", "opening the checkpoint", "nowhere: no such file"),
    ("corrupt", "opening the checkpoint", "[InvalidHeader"),
    ("bad_shape", "loading", "'model.norm.weight'")])
def test_a_rank_that_fails_makes_both_raise_naming_it(two_ranks, scenario, stage, cause):
    for rank, out in enumerate(two_ranks[0][scenario]):
        assert out.get("code") == "RankFailed", (rank, out)
        assert f"{stage}, failed on rank 1: " in out["error"] and "rank 0" not in out["error"], out["error"]
        assert cause in out["error"], out["error"]
    if stage != "loading":
        assert two_ranks[0][scenario][0]["untouched"]  # rank 0 stopped before loading anything


def test_ranks_that_both_fail_are_each_named_with_their_cause(two_ranks):
    for out in two_ranks[0]["both_missing"]:
        assert out.get("code") == "RankFailed", out
        assert "failed on ranks 0, 1: rank 0: " in out["error"] and "nowhere0" in out["error"]
        assert "; rank 1: " in out["error"] and "nowhere1" in out["error"]


def test_ranks_with_different_checkpoints_both_raise_before_loading(two_ranks):
    for out in two_ranks[0]["disagree"]:
        assert out.get("code") == "RanksDisagree", out
        assert "rank 0: model.safetensors (210712 bytes)" in out["error"] and "rank 1: model.safetensors (" in out["error"]
        assert out["untouched"]


def test_a_rank_that_died_is_an_error_not_a_hang(two_ranks):
    survivor = two_ranks[0]["dead"][0]
    assert survivor.get("code") == "RankFailed", survivor
    assert "not every rank answered" in survivor["error"], survivor["error"]
