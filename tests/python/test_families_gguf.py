"""The 2026 families written as GGUF the way llama.cpp's converter writes them (the family seam's
GGUF description: src/families/), judged by the peers: gguf-py's own table of each architecture's
tensor names holds every name we write, transformers 5 loads our GGUF (its gguf_file= reader, for
the architectures it reads) and computes the original's logits, and the engine run on the GGUF
computes transformers' logits on the original. Tiny random models built and saved by the pinned
transformers."""
import copy
import os
import pathlib
import subprocess

import numpy as np

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import PLAIN, TOLERANCE, build, engine_logits, error, reference, sequence  # noqa: E402
from test_families_glm_granite import GLM4, GLM_ROPE, GRANITE_MOE  # noqa: E402
from test_families_deepseek import V2, V3, YARN, deepseek  # noqa: E402
from test_families_gpt_oss import UNROUNDED, gpt_oss, save_mxfp4  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))

# Where transformers 5.19's GGUF reader has no key for a field it takes the config class's default
# (Qwen3's head_dim 128, Qwen3-MoE's moe_intermediate_size 768, Gemma 3's query_pre_attn_scalar 256):
# the models use those values. Gemma 3 as llama.cpp runs it: every sixth layer global,
# query_pre_attn_scalar = head_dim, sliding layers turning with base 10000.
GEMMA3_ROPE = {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
LLAMA_CPP_YARN = {**YARN, "mscale": 0.8}
# gpt-oss as llama.cpp runs it: its SwiGLU limit 7 and alpha 1.702 (transformers' defaults), yarn's
# band rounded (truncate true; gpt-oss's own false is not llama.cpp's) over frequencies that turn
# within the sequences, cos and sin scaled by 0.1 ln(32) + 1.
GPT_OSS_YARN = {**UNROUNDED, "truncate": True}
GPT_OSS = dict(swiglu_limit=7.0, swiglu_alpha=1.702)
# Llama 4 as llama.cpp runs it (transformers' defaults): every 4th layer without rope, the others
# chunked by 8192 with q/k L2-normalised, the temperature tuned by 8192 and 0.1; here layers 1 and 3
# sparse (4 experts of 16 units, top-1, a shared expert), 0 and 2 dense (24 units).
LLAMA4_ROPE = {"rope_type": "default", "rope_theta": 100.0}
LLAMA4 = dict(num_hidden_layers=4, hidden_size=32, intermediate_size=16, intermediate_size_mlp=24, head_dim=8,
              num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2)
FAMILIES = {
    "qwen3": (transformers.Qwen3Config, PLAIN, dict(head_dim=128), "QWEN3"),
    "qwen3_moe": (transformers.Qwen3MoeConfig, PLAIN,
                  dict(head_dim=16, moe_intermediate_size=768, num_local_experts=4, num_experts_per_tok=2,
                       norm_topk_prob=True), "QWEN3MOE"),
    "gemma3_text": (transformers.Gemma3TextConfig, GEMMA3_ROPE,
                    dict(head_dim=256, query_pre_attn_scalar=256, sliding_window=4, num_hidden_layers=6), "GEMMA3"),
    "olmo2": (transformers.Olmo2Config, PLAIN, {}, "OLMO2"),
    "granite": (transformers.GraniteConfig, PLAIN, dict(embedding_multiplier=3.0, attention_multiplier=0.2,
                                                        residual_multiplier=0.5, logits_scaling=4.0), "GRANITE"),
    "glm4": (transformers.Glm4Config, GLM_ROPE, GLM4, "GLM4"),
    "granitemoe": (transformers.GraniteMoeConfig, PLAIN, GRANITE_MOE, "GRANITE_MOE"),
    # The shared MLP's input_linear split into ffn_gate_shexp and ffn_up_shexp.
    "granitemoeshared": (transformers.GraniteMoeSharedConfig, PLAIN, dict(GRANITE_MOE, shared_intermediate_size=16), "GRANITE_MOE"),
    # llama.cpp's deepseek2 (at c392e509) takes q_proj in a model of 27 layers (V2-Lite's), q_a/q_b in the others.
    "deepseek_v2": (transformers.DeepseekV2Config, PLAIN, dict(V2, q_lora_rank=24), "DEEPSEEK2"),
    "deepseek_v2 lite": (transformers.DeepseekV2Config, PLAIN, dict(V2, num_hidden_layers=27), "DEEPSEEK2"),
    # Sigmoid gating, exp_probs_b, 2 of 4 groups, renormalised and scaled weights, layer 0 dense.
    "deepseek_v3": (transformers.DeepseekV3Config, PLAIN, V3, "DEEPSEEK2"),
    # Yarn as llama.cpp's deepseek2 runs it: mscale = mscale_all_dim (cos and sin unscaled), bands 32 and 1.
    "deepseek_v2 yarn": (transformers.DeepseekV2Config, LLAMA_CPP_YARN, dict(V2, q_lora_rank=24), "DEEPSEEK2"),
    # The experts' stacks split and transposed as llama.cpp's converter writes dense experts, with biases.
    "gpt_oss": (transformers.GptOssConfig, GPT_OSS_YARN, GPT_OSS, "GPT_OSS"),
    "llama4_text": (transformers.Llama4TextConfig, LLAMA4_ROPE, LLAMA4, "LLAMA4"),
}
BUILDERS = {"deepseek_v3": deepseek,  # a correction bias as large as the scores' spread (from_config's is 0)
            "gpt_oss": lambda cls, rope, **sizes: gpt_oss(rope, **sizes)}  # sinks as large as the scores
TRANSFORMERS_READS = {"qwen3", "qwen3_moe", "gemma3_text"}  # the others are not in its GGUF reader's tables


def convert(src, out, *args):
    done = subprocess.run([str(CLI), "convert", str(src), str(out), "-q", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, tmp_path_factory):
    """(model_type, the transformers model, its folder, our F32 GGUF of it)."""
    if not CLI.is_file():
        pytest.skip(f"the CLI is not built at {CLI}")
    cls, rope, sizes, _ = FAMILIES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    model = BUILDERS.get(request.param, build)(cls, rope, **sizes)
    model.save_pretrained(folder)
    return request.param, model, folder, convert(folder, folder / "model.gguf", "--gguf-type", "f32", "--no-tokenizer")


def test_gguf_py_names_every_tensor_we_write_for_the_architecture(family):
    """general.architecture is llama.cpp's, and each tensor name is one gguf-py's table gives that architecture."""
    model_type, _, _, path = family
    arch = getattr(gguf.MODEL_ARCH, FAMILIES[model_type][3])
    reader = gguf.GGUFReader(path)
    field = reader.fields["general.architecture"]
    assert bytes(field.parts[field.data[0]]).decode() == gguf.MODEL_ARCH_NAMES[arch]
    allowed = {gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[arch]}
    for t in reader.tensors:
        stem = t.name.rsplit(".", 1)[0]
        generic = ".".join("{bid}" if part.isdigit() else part for part in stem.split("."))
        assert generic in allowed, (t.name, sorted(allowed))


def test_the_engine_runs_our_gguf_as_transformers_runs_the_original(family):
    _, model, _, path = family
    llm = wl.LLM(str(path))
    for n in (1, 7, 13):
        ids = sequence(n, seed=n)
        assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_transformers_loads_our_gguf_and_computes_the_originals_logits(family):
    """transformers' own GGUF reader (gguf_file=), which applies llama.cpp's conventions in reverse."""
    model_type, model, folder, path = family
    if model_type not in TRANSFORMERS_READS:
        pytest.skip(f"transformers 5.19 reads no GGUF of {model_type}")
    peer = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=path.name, dtype=torch.float32).eval()
    peer.config._attn_implementation = "eager"
    for n in (1, 7, 13):
        ids = sequence(n, seed=n)
        assert error(reference(peer, ids), reference(model, ids)) < TOLERANCE


def test_what_llama_cpp_would_run_otherwise_is_refused_by_name(tmp_path):
    """A Gemma 3 whose layers are not llama.cpp's five sliding to one global cannot be written as GGUF."""
    cls, rope, sizes, _ = FAMILIES["gemma3_text"]
    model = build(cls, rope, **{**sizes, "num_hidden_layers": 4,
                                "layer_types": ["sliding_attention", "full_attention"] * 2})
    model.save_pretrained(tmp_path)
    done = subprocess.run([str(CLI), "convert", str(tmp_path), str(tmp_path / "out.gguf"), "--gguf-type", "f32",
                           "--no-tokenizer"], capture_output=True, text=True)
    assert done.returncode != 0 and "sliding" in done.stderr, done.stderr
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.parametrize("change, named", [
    (dict(mscale=1.0), "cos/sin x"),  # transformers scales cos and sin by mscale / mscale_all_dim; llama.cpp does not
    (dict(beta_fast=16), "beta_fast"),  # llama.cpp's bands are its defaults
    (dict(rope_type="linear", factor=4.0), "rope_scaling"),  # only yarn
])
def test_deepseek_rope_scaling_llama_cpp_does_not_run_is_refused_by_name(tmp_path, change, named):
    cls, rope, sizes, _ = FAMILIES["deepseek_v2 yarn"]
    rope = {k: v for k, v in {**rope, **change}.items() if change.get("rope_type") != "linear" or k in ("rope_type", "rope_theta", "factor")}
    build(cls, rope, **sizes).save_pretrained(tmp_path)
    done = subprocess.run([str(CLI), "convert", str(tmp_path), str(tmp_path / "out.gguf"), "--gguf-type", "f32",
                           "--no-tokenizer"], capture_output=True, text=True)
    assert done.returncode != 0 and named in done.stderr, done.stderr
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.parametrize("model_type, change, named", [
    # llama.cpp scores a group by its best two experts, V2 by its best one
    ("deepseek_v2", dict(topk_method="group_limited_greedy", n_group=4, topk_group=2), "best two"),
    ("deepseek_v2", dict(q_lora_rank=None), "q_lora_rank"),  # q_proj outside a model of 27 layers
    ("deepseek_v3", dict(rope_interleave=False), "half-split"),  # llama.cpp turns adjacent pairs
])
def test_deepseek_what_llama_cpp_does_not_follow_is_refused_by_name(tmp_path, model_type, change, named):
    cls, rope, sizes, _ = FAMILIES[model_type]
    build(cls, rope, **{**sizes, **change}).save_pretrained(tmp_path)
    done = subprocess.run([str(CLI), "convert", str(tmp_path), str(tmp_path / "out.gguf"), "--gguf-type", "f32",
                           "--no-tokenizer"], capture_output=True, text=True)
    assert done.returncode != 0 and named in done.stderr, done.stderr
    assert not (tmp_path / "out.gguf").exists()


# The transformers 5 tensors of a gpt-oss or Llama 4 GGUF, from gguf-py's values of its tensors and
# the converter's split undone (gpt-oss's gate and up interleaved in the last dim, Llama 4's in
# halves; each transposed back): an oracle written apart from the C++ tables.
GGUF_STEMS = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
              "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "post_attention_norm": "post_attention_layernorm",
              "ffn_norm": "post_attention_layernorm", "ffn_gate": "feed_forward.gate_proj", "ffn_up": "feed_forward.up_proj",
              "ffn_down": "feed_forward.down_proj", "ffn_gate_shexp": "feed_forward.shared_expert.gate_proj",
              "ffn_up_shexp": "feed_forward.shared_expert.up_proj", "ffn_down_shexp": "feed_forward.shared_expert.down_proj"}


def transformers_state(path, model_type):
    values = {t.name: torch.from_numpy(np.array(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
                                       .reshape([int(n) for n in reversed(t.shape)])) for t in gguf.GGUFReader(path).tensors}
    mlp = "mlp" if model_type == "gpt_oss" else "feed_forward"
    join = ((lambda g, u: torch.stack([g, u], dim=-1).flatten(-2)) if model_type == "gpt_oss"
            else (lambda g, u: torch.cat([g, u], dim=-1)))
    state = {"model.embed_tokens.weight": values.pop("token_embd.weight"), "model.norm.weight": values.pop("output_norm.weight"),
             "lm_head.weight": values.pop("output.weight")}
    for name, v in values.items():
        _, layer, stem, suffix = name.split(".")
        at, weight = f"model.layers.{layer}.", suffix == "weight"
        mine = (lambda x: x.transpose(-1, -2)) if weight else (lambda x: x)  # noqa: E731
        if stem == "ffn_gate_exps":
            up = values[f"blk.{layer}.ffn_up_exps.{suffix}"]
            state[f"{at}{mlp}.experts.gate_up_proj{'' if weight else '_bias'}"] = join(mine(v), mine(up))
        elif stem == "ffn_down_exps":
            state[f"{at}{mlp}.experts.down_proj{'' if weight else '_bias'}"] = mine(v)
        elif stem == "attn_sinks":
            state[f"{at}self_attn.sinks"] = v
        elif stem == "ffn_gate_inp":
            state[f"{at}{mlp}.router.{suffix}"] = v
        elif stem != "ffn_up_exps":
            state[f"{at}{GGUF_STEMS[stem]}.{suffix}"] = v
    return state


@pytest.mark.parametrize("model_type", ["gpt_oss", "llama4_text"])
def test_quantised_gguf_runs_as_transformers_runs_the_values_it_holds(tmp_path, model_type):
    """Q8_0: the split, transposed experts quantised in blocks along their rows as llama.cpp
    quantises them (Llama 4's 16-unit down_proj rows fall back to F16). The engine on the file
    computes transformers' logits on the weights gguf-py decodes from it (joined back by the
    converter's rule; the original's differ by the rounding, and by more where it flips an expert's
    choice); `inspect` names the family."""
    cls, rope, sizes, _ = FAMILIES[model_type]
    model = BUILDERS.get(model_type, build)(cls, rope, **sizes)
    model.save_pretrained(tmp_path)
    path = convert(tmp_path, tmp_path / "q8.gguf", "--gguf-type", "q8_0", "--no-tokenizer")
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(path).tensors}
    assert types["blk.1.ffn_gate_exps.weight"] == gguf.GGMLQuantizationType.Q8_0, types
    peer = copy.deepcopy(model)
    peer.load_state_dict(transformers_state(path, model_type))
    llm = wl.LLM(str(path))
    for n in (1, 7, 13):
        ids = sequence(n, seed=n)
        assert error(engine_logits(llm, ids), reference(peer, ids)) < TOLERANCE
    shown = subprocess.run([str(CLI), "inspect", str(path)], capture_output=True, text=True)
    assert f"model: {model_type}: " in shown.stdout, shown.stdout


@pytest.mark.parametrize("kwargs", [{"tensor_parallel_size": 2}, {"tensor_parallel_size": 2, "enable_expert_parallel": True}])
def test_gpt_oss_gguf_split_over_ranks(tmp_path, kwargs):
    """gpt-oss's GGUF read one tensor per expert over two ranks: split inside each expert, or each
    rank holding whole experts with their down biases (each rank adds its own experts')."""
    cls, rope, sizes, _ = FAMILIES["gpt_oss"]
    model = gpt_oss(rope, **sizes)
    model.save_pretrained(tmp_path)
    llm = wl.LLM(str(convert(tmp_path, tmp_path / "f32.gguf", "--gguf-type", "f32", "--no-tokenizer")), **kwargs)
    for n in (1, 7):
        ids = sequence(n, seed=n)
        assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def test_gpt_oss_mxfp4_experts_are_written_decoded(tmp_path):
    """The released checkpoints' MXFP4 experts, decoded to the type --gguf-type names (here F32
    stacks; without it they stay MXFP4, as below): the engine on the GGUF computes transformers'
    logits of the weights they decode to."""
    cls, rope, sizes, _ = FAMILIES["gpt_oss"]
    model = gpt_oss(rope, **sizes)
    save_mxfp4(model, tmp_path / "hf")
    path = convert(tmp_path / "hf", tmp_path / "model.gguf", "--gguf-type", "f32", "--no-tokenizer")  # apart from config.json
    llm = wl.LLM(str(path))
    for n in (1, 11):
        ids = sequence(n, seed=n)
        assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE


def mxfp4_gguf_oracle(folder):
    """Each expert tensor of the GGUF of the checkpoint in `folder`, as transformers decodes the
    checkpoint's blocks and scales (convert_moe_packed_tensors: [E, in, out]) and llama.cpp's
    converter splits them (gate and up the even and odd columns) and transposes them."""
    from safetensors.torch import load_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    stored, oracle = load_file(str(folder / "model.safetensors")), {}
    for name in stored:
        if not name.endswith("_blocks"):
            continue
        stem = name[:-len("_blocks")]
        dense = convert_moe_packed_tensors(stored[name], stored[stem + "_scales"], dtype=torch.float32).transpose(-1, -2)
        layer = stem.split(".")[2]
        if stem.endswith("gate_up_proj"):
            oracle[f"blk.{layer}.ffn_gate_exps.weight"], oracle[f"blk.{layer}.ffn_up_exps.weight"] = dense[:, ::2], dense[:, 1::2]
        else:
            oracle[f"blk.{layer}.ffn_down_exps.weight"] = dense
    return oracle


def test_gpt_oss_mxfp4_experts_stay_mxfp4_as_llama_cpp_writes_them(tmp_path):
    """Without --gguf-type, as llama.cpp's converter writes the released checkpoints: each expert
    stack is GGUF MXFP4 (ggml type 39), its blocks repacked from the checkpoint's, the other matrices
    F16, general.file_type MOSTLY_MXFP4_MOE. gguf-py's dequantize of every expert tensor is exactly
    what transformers decodes from the checkpoint's blocks and scales (values equal; gguf-py's table
    has no -0), the engine on the file computes transformers' logits on the weights gguf-py reads from
    it, and with --gguf-type f32 --gguf-mxfp4 keep those of the original; --gguf-type f16 decodes them."""
    cls, rope, sizes, _ = FAMILIES["gpt_oss"]
    model = gpt_oss(rope, **sizes)
    save_mxfp4(model, tmp_path / "hf")
    path = convert(tmp_path / "hf", tmp_path / "mxfp4.gguf", "--no-tokenizer")
    reader = gguf.GGUFReader(path)
    oracle = mxfp4_gguf_oracle(tmp_path / "hf")
    assert len(oracle) == 3 * sizes.get("num_hidden_layers", 4)
    types = {t.name: t.tensor_type for t in reader.tensors}
    assert {types[n] for n in oracle} == {gguf.GGMLQuantizationType.MXFP4} and gguf.GGMLQuantizationType.MXFP4 == 39
    assert types["blk.0.attn_q.weight"] == gguf.GGMLQuantizationType.F16
    field = reader.fields["general.file_type"]
    assert int(field.parts[field.data[0]][0]) == gguf.LlamaFileType.MOSTLY_MXFP4_MOE
    for t in reader.tensors:
        if t.name in oracle:
            got = np.array(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape([int(n) for n in reversed(t.shape)])
            want = oracle[t.name].numpy()
            assert got.shape == want.shape and np.array_equal(got, want), t.name
            assert np.array_equal((got + 0.0).view(np.uint32), (want + 0.0).view(np.uint32)), t.name
    peer = copy.deepcopy(model)
    peer.load_state_dict(transformers_state(path, "gpt_oss"))
    llm = wl.LLM(str(path))
    for n in (1, 11):
        ids = sequence(n, seed=n)
        assert error(engine_logits(llm, ids), reference(peer, ids)) < TOLERANCE
    exact = convert(tmp_path / "hf", tmp_path / "f32-mxfp4.gguf", "--gguf-type", "f32", "--gguf-mxfp4", "keep", "--no-tokenizer")
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(exact).tensors}
    assert types["blk.1.ffn_down_exps.weight"] == gguf.GGMLQuantizationType.MXFP4 and types["blk.1.attn_q.weight"] == gguf.GGMLQuantizationType.F32
    llm = wl.LLM(str(exact))
    for n in (1, 11):
        ids = sequence(n, seed=n)
        assert error(engine_logits(llm, ids), reference(model, ids)) < TOLERANCE
    dense = convert(tmp_path / "hf", tmp_path / "f16.gguf", "--gguf-type", "f16", "--no-tokenizer")
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(dense).tensors}
    assert types["blk.1.ffn_down_exps.weight"] == gguf.GGMLQuantizationType.F16
    expert_bytes = {p: sum(int(t.n_bytes) for t in gguf.GGUFReader(p).tensors if t.name in oracle) for p in (path, dense)}
    print(f"tiny gpt-oss: experts {expert_bytes[dense]} bytes F16, {expert_bytes[path]} MXFP4; files {dense.stat().st_size} "
          f"and {path.stat().st_size} bytes")
    assert expert_bytes[dense] * 17 == expert_bytes[path] * 64  # 32 values: 64 bytes F16, 17 MXFP4


def refused(tmp_path, model_type, named, **change):
    """A model of the family's GGUF row with `change` cannot be written as GGUF, the message naming `named`."""
    cls, rope, sizes, _ = FAMILIES[model_type]
    rope = change.pop("rope", rope)
    BUILDERS.get(model_type, build)(cls, rope, **{**sizes, **change}).save_pretrained(tmp_path)
    done = subprocess.run([str(CLI), "convert", str(tmp_path), str(tmp_path / "out.gguf"), "--gguf-type", "f32",
                           "--no-tokenizer"], capture_output=True, text=True)
    assert done.returncode != 0 and named in done.stderr, done.stderr
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.parametrize("change, named", [
    (dict(swiglu_limit=5.0), "clamped SwiGLU (limit 5, alpha 1.702)"),  # llama.cpp's limit is 7
    (dict(swiglu_alpha=1.0), "clamped SwiGLU (limit 7, alpha 1)"),  # and its alpha 1.702
    (dict(rope=UNROUNDED), "(not truncated)"),  # gpt-oss's own truncate false: llama.cpp rounds the band
    (dict(rope={**GPT_OSS_YARN, "beta_fast": 16.0}), "beta_fast 32"),  # llama.cpp reads no bands for gpt-oss
    (dict(attention_bias=False), "requires q/k/v/o biases"),
])
def test_gpt_oss_what_llama_cpp_hard_codes_is_refused_by_name(tmp_path, change, named):
    refused(tmp_path, "gpt_oss", named, **change)


@pytest.mark.parametrize("change, named", [
    (dict(attention_chunk_size=16), "chunked attention 8192"),  # llama.cpp chunks by 8192
    (dict(no_rope_layer_interval=2), "layers without rope"),  # llama.cpp's NoPE layer is every 4th
    (dict(layer_types=["chunked_attention"] * 4), "chunked attention"),
    (dict(floor_scale=4), "attention temperature tuning"),  # llama.cpp: floor_scale 8192, attn_scale 0.1
    (dict(attn_temperature_tuning=False), "attention temperature tuning"),
    (dict(use_qk_norm=False), "q/k L2 norm"),  # on, except in llama.cpp's 128-expert model
    (dict(moe_layers=[1, 2]), "sparse layers layers [1,3] instead of layers [1,2]"),  # llama.cpp: every step-th
    (dict(attention_bias=True), "loads no attention biases"),
    (dict(hidden_act="gelu"), "hidden_act"),  # llama.cpp's llama4 runs SiLU
    (dict(rope={"rope_type": "llama3", "rope_theta": 100.0, "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 16}), "rope_scaling"),  # rope_freqs not written
])
def test_llama4_what_llama_cpp_hard_codes_is_refused_by_name(tmp_path, change, named):
    refused(tmp_path, "llama4_text", named, **change)
