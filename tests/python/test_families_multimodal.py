"""The released Gemma 3 (4B and up), Llama 4 (Scout, Maverick) and Mistral Small 3.1+ checkpoints are
multimodal: transformers' ...ForConditionalGeneration, config.json with the language model's fields
in text_config, its tensors under language_model. beside a vision tower and a projector. The engine
runs their language model (Family::multimodal): tiny random models of each, built and saved by the
pinned transformers 5, give transformers' own text-only logits at every position, in one process and
with two tensor-parallel ranks; the vision tensors are never read."""
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import TOLERANCE, engine_logits, error, refused_after, scaled, sequence  # noqa: E402

VOCAB = 97
TEXT = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=8, max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0)
VISION = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14)
FAST = {"rope_type": "default", "rope_theta": 100.0}  # turns within the sequences


def gemma3(tie=True):
    text = dict(TEXT, sliding_window=5, layer_types=["sliding_attention", "full_attention"],
                rope_parameters={"sliding_attention": FAST, "full_attention": {"rope_type": "default", "rope_theta": 1000.0}})
    return transformers.Gemma3Config(text_config=text, vision_config=VISION, mm_tokens_per_image=4, image_token_index=VOCAB - 1,
                                     boi_token_index=VOCAB - 2, eoi_token_index=VOCAB - 3, tie_word_embeddings=tie)


def llama4():
    text = dict(TEXT, intermediate_size=16, intermediate_size_mlp=24, num_local_experts=4, num_experts_per_tok=1,
                interleave_moe_layer_step=2, no_rope_layer_interval=2, attention_chunk_size=5, floor_scale=4, attn_scale=0.5,
                rope_parameters=FAST)
    vision = dict(VISION, vision_output_dim=32, projector_input_dim=32, projector_output_dim=32)
    return transformers.Llama4Config(text_config=text, vision_config=vision, image_token_index=VOCAB - 1,
                                     boi_token_index=VOCAB - 2, eoi_token_index=VOCAB - 3)


def mistral3():
    return transformers.Mistral3Config(text_config=dict(TEXT, rope_parameters=FAST), vision_config=dict(VISION, head_dim=8),
                                       image_token_index=VOCAB - 1, tie_word_embeddings=False)


def built(config):
    """The multimodal model of `config`, eager attention, weights large enough to move the logits."""
    for c in (config, config.text_config, config.vision_config):
        c._attn_implementation = "eager"
    return scaled(transformers.AutoModelForImageTextToText.from_config(config, dtype=torch.float32).eval(), seed=4321)


def text_logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0].double().numpy()


@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("make, text_type", [(gemma3, "gemma3_text"), (llama4, "llama4_text"), (mistral3, "mistral")],
                         ids=["gemma3", "llama4", "mistral3"])
def test_the_language_model_of_a_multimodal_checkpoint_matches_transformers(tmp_path, make, text_type, tp):
    model = built(make())
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert "text_config" in cfg and cfg["model_type"] != text_type
    llm = wl.LLM(str(tmp_path), tensor_parallel_size=tp)
    assert llm.config["architecture"] == text_type
    worst = max(error(engine_logits(llm, ids), text_logits(model, ids)) for ids in (sequence(n, seed=n) for n in (1, 7, 13)))
    assert worst < TOLERANCE, worst


def test_the_outer_tie_word_embeddings_is_the_one_transformers_follows(tmp_path):
    """Gemma 3 untied at the outer config, its text_config saying tied: transformers keeps lm_head."""
    model = built(gemma3(tie=False))
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["text_config"]["tie_word_embeddings"] = True
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    ids = sequence(7, seed=7)
    assert error(engine_logits(wl.LLM(str(tmp_path)), ids), text_logits(model, ids)) < TOLERANCE


@pytest.mark.parametrize("edit, match", [
    (lambda cfg: cfg.pop("text_config"), "text_config.*missing or not an object: a gemma3 config keeps"),
    (lambda cfg: cfg["text_config"].update(model_type="llama"), "text_config.model_type.*'llama': a gemma3 model's language model is a gemma3_text"),
])
def test_a_multimodal_config_without_its_language_model_is_refused_by_name(tmp_path, edit, match):
    built(gemma3()).save_pretrained(tmp_path)
    refused_after(tmp_path, edit, match)


def test_a_multimodal_checkpoint_converts_to_its_language_models_gguf(tmp_path):
    """As llama.cpp's converter writes Mistral 3: the language model alone, under llama's names (the
    vision model goes to a separate mmproj file); gguf-py reads it, every name is in its table, and
    the engine on the GGUF gives transformers' logits on the original."""
    gguf = pytest.importorskip("gguf")
    import os
    import subprocess

    model = built(transformers.Mistral3Config(text_config=dict(TEXT, rope_parameters=FAST, sliding_window=None),
                                              vision_config=dict(VISION, head_dim=8), image_token_index=VOCAB - 1,
                                              tie_word_embeddings=False))
    model.save_pretrained(tmp_path / "hf")
    out = tmp_path / "m.gguf"
    done = subprocess.run([os.environ.get("WL_CLI", "build/weightloader"), "convert", str(tmp_path / "hf"), str(out), "-q",
                           "--gguf-type", "f32"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    reader = gguf.GGUFReader(str(out))
    names = {t.name for t in reader.tensors}
    # The summary counts what was written (one GGUF tensor per language-model tensor here) and the
    # vision tensors left out, by safetensors' own listing of the checkpoint.
    from safetensors import safe_open
    with safe_open(str(tmp_path / "hf" / "model.safetensors"), "pt") as f:
        stored = list(f.keys())
    vision = [n for n in stored if "vision_tower." in n or "multi_modal_projector." in n]
    assert vision and len(stored) - len(vision) == len(names), (len(stored), len(vision), len(names))
    assert f"converted {len(names)} tensors " in done.stdout, done.stdout
    assert f"left out the vision model's {len(vision)} tensors" in done.stdout, done.stdout
    llama = {gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[gguf.MODEL_ARCH.LLAMA]}
    assert {"token_embd.weight", "output.weight", "blk.1.attn_q.weight"} <= names
    assert all(n.rsplit(".", 1)[0].replace("blk.0.", "blk.{bid}.").replace("blk.1.", "blk.{bid}.") in llama for n in names), names
    ids = sequence(13, seed=13)
    assert error(engine_logits(wl.LLM(str(out)), ids), text_logits(model, ids)) < TOLERANCE
