"""The 2026 families written as GGUF the way llama.cpp's converter writes them (the family seam's
GGUF description: src/families/), judged by the peers: gguf-py's own table of each architecture's
tensor names holds every name we write, transformers 5 loads our GGUF (its gguf_file= reader, for
the architectures it reads) and computes the original's logits, and the engine run on the GGUF
computes transformers' logits on the original. Tiny random models built and saved by the pinned
transformers."""
import os
import pathlib
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import PLAIN, TOLERANCE, build, engine_logits, error, reference, sequence  # noqa: E402
from test_families_glm_granite import GLM4, GLM_ROPE, GRANITE_MOE  # noqa: E402
from test_families_deepseek import V2, V3, YARN, deepseek  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))

# Where transformers 5.19's GGUF reader has no key for a field it takes the config class's default
# (Qwen3's head_dim 128, Qwen3-MoE's moe_intermediate_size 768, Gemma 3's query_pre_attn_scalar 256):
# the models use those values. Gemma 3 as llama.cpp runs it: every sixth layer global,
# query_pre_attn_scalar = head_dim, sliding layers turning with base 10000.
GEMMA3_ROPE = {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
LLAMA_CPP_YARN = {**YARN, "mscale": 0.8}
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
}
BUILDERS = {"deepseek_v3": deepseek}  # a correction bias as large as the scores' spread (from_config's is 0)
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
