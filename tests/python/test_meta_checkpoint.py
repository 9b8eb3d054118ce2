"""Meta's original checkpoints (params.json + consolidated.NN.pth), made by make_meta_checkpoint.py
from the tiny Hugging Face Llama: loaded as one model under Hugging Face names, bit for bit the
original, and generating the logits transformers computed (corpus.json), on 1, 2 and 4 ranks."""
import json
import os
import subprocess

import pytest
import torch

import weightloader as wl
from make_meta_checkpoint import make, make_from_llama2c, read_safetensors
from test_name_map import Named


@pytest.fixture(scope="module")
def hf_tiny():
    path = os.path.join(os.environ.get("WL_TESTDATA_DIR", ""), "hf-tiny-random-llama-2")
    if not os.path.isdir(path):
        pytest.skip(f"no test data at {path}")
    return path


@pytest.fixture(scope="module")
def original(hf_tiny):
    return read_safetensors(os.path.join(hf_tiny, "model.safetensors"))


LAYOUTS = [(1, 1), (2, 1), (4, 1), (2, 0), (4, 0)]  # (shards, the embedding's split dim: 1 Llama 1/2, 0 Llama 3)


@pytest.fixture(scope="module", params=LAYOUTS, ids=[f"{s}shards-embed{d}" for s, d in LAYOUTS])
def meta_dir(request, hf_tiny, tmp_path_factory):
    shards, dim = request.param
    return make(hf_tiny, tmp_path_factory.mktemp("meta") / "llama", shards, dim)


def test_loads_bit_for_bit_as_the_hf_original_reading_each_byte_once(meta_dir, original):
    assert wl._core.detect_loader(str(meta_dir))[0] == "meta"
    module = Named({k: v.shape for k, v in original.items()}, torch.bfloat16)
    loader = wl.WeightLoaderRegistry.get("meta")()
    report = loader.load_weights(module, loader.get_weights(str(meta_dir)))
    state = module.state_dict()
    for name, t in original.items():
        assert torch.equal(state[name], t), name
    assert report["bytes_read"] == sum(t.numel() * t.element_size() for t in original.values())
    assert report["missing"] == [] and report["unexpected"] == []


def test_generates_the_reference_logits_on_every_rank_count(meta_dir, hf_tiny):
    corpus = json.load(open(os.path.join(hf_tiny, "corpus.json")))
    atol, rtol = corpus["logit_tolerance"]["absolute"], corpus["logit_tolerance"]["relative"]
    for tp in (1, 2, 4):
        llm = wl.LLM(str(meta_dir), tensor_parallel_size=tp)
        assert llm.config["num_heads"] == 4 and llm.config["intermediate_size"] == 64 and llm.config["vocab_size"] == 3000
        for case in corpus["model_cases"]:
            want = case["greedy_continuation"]
            out = llm.generate(case["input_ids"], wl.SamplingParams(temperature=0, max_tokens=len(want)), return_logits=True)[0]
            got = out.outputs[0].token_ids
            assert got == want[:len(got)] and got, (tp, case["input_ids"])
            logits = out.logits[len(case["input_ids"]) - 1]
            for index, value in case["sampled_logits"].items():
                assert abs(logits[int(index)] - value) <= atol + rtol * abs(value), (tp, index)


def test_cli_generate_runs_the_directory(meta_dir, hf_tiny):
    cli = os.environ.get("WL_CLI")
    if not cli:
        pytest.skip("WL_CLI is not set")
    run = lambda model, *extra: subprocess.run([cli, "generate", "--model", str(model), "--prompt-ids", "1,42,99", "-n", "8",
                                                "-t", "0", "-q", *extra], check=True, capture_output=True, text=True).stdout
    want = run(hf_tiny)
    assert run(meta_dir) == want
    assert run(meta_dir, "--tp", "2") == want


def test_a_missing_shard_or_bad_params_are_clear_errors(hf_tiny, tmp_path):
    d = make(hf_tiny, tmp_path / "gap", 4)
    (d / "consolidated.01.pth").unlink()
    with pytest.raises(wl.errors.NotFoundError, match=r"shard 1 is missing.*IndexFileMissing"):
        wl.WeightLoaderRegistry.get("meta")().get_weights(str(d))
    d = make(hf_tiny, tmp_path / "params", 2)
    (d / "params.json").write_text('{"n_heads": 4}')
    with pytest.raises(wl.errors.FormatError, match=r"params.json: field 'dim': missing"):
        wl.WeightLoaderRegistry.get("meta")().get_weights(str(d))


@pytest.fixture(scope="module")
def stories():
    path = os.path.join(os.environ.get("WL_TESTDATA_DIR", ""), "llama2c-stories260K")
    if not os.path.isdir(path):
        pytest.skip(f"no test data at {path}")
    return path


@pytest.mark.parametrize("shards", [2, 4])
def test_stories260k_as_meta_shards_matches_run_c(stories, shards, tmp_path):
    """Head size 8 and grouped-query attention (8 heads, 4 kv heads): the rotary reordering and the
    kv split checked against run.c's own output."""
    meta = make_from_llama2c(os.path.join(stories, "stories260K.bin"), tmp_path / "meta", shards)
    l2c = wl.WeightLoaderRegistry.get("llama2c")()
    reference = l2c.get_weights(os.path.join(stories, "stories260K.bin"))
    module = Named({name: reference.info(name)["shape"] for name in reference}, torch.float32)
    mine = Named({name: reference.info(name)["shape"] for name in reference}, torch.float32)
    l2c.load_weights(module, reference)
    meta_loader = wl.WeightLoaderRegistry.get("meta")()
    report = meta_loader.load_weights(mine, meta_loader.get_weights(str(meta)), strict=False)
    # run.c's classifier is the embedding; the Meta files carry it as output.weight
    assert report["missing"] == [] and report["unexpected"] == ["lm_head.weight"]
    for name, t in module.state_dict().items():
        assert torch.equal(mine.state_dict()[name], t), name
    expected = open(os.path.join(stories, "expected_greedy_t0_n200.txt")).read().rstrip("\n")
    for tp in (1, 2, 4):
        llm = wl.LLM(str(meta), tokenizer=os.path.join(stories, "tok512.bin"), tensor_parallel_size=tp)
        assert llm.generate("", wl.SamplingParams(temperature=0, max_tokens=200))[0].full_text == expected, tp
