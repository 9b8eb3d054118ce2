"""NVIDIA ModelOpt's NVFP4 and FP8 checkpoints, as ModelOpt itself exports them on this CPU
(mtq.quantize a tiny random Llama, export_hf_checkpoint): loaded dense bit for bit against
ModelOpt's own dequantisation (NVFP4QTensor.dequantize), found from config.json's
quantization_config or from hf_quant_config.json alone, handed over packed as stored, and run by
the engine to the logits transformers computes with ModelOpt's dequantised weights (the ranks'
whole-group splits: tests/formats/quantized/packed_shard_test.cpp)."""
import json
import shutil
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("modelopt")

import weightloader as wl  # noqa: E402
from test_transformers5_configs import TOLERANCE, engine_logits, error, sequence  # noqa: E402

LAYER = "model.layers.1.mlp.down_proj"


def export(folder, algo):
    """A tiny Llama quantised by ModelOpt (mtq.quantize with its own default config for `algo`,
    calibrated on random tokens) and written by its export_hf_checkpoint; returns the original model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import modelopt.torch.quantization as mtq
        from modelopt.torch.export import export_hf_checkpoint
    config = transformers.LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, architectures=["LlamaForCausalLM"])
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(10)  # weights of a size that the FP8 group scales hold in their normal range
    cfg = {"NVFP4": mtq.NVFP4_DEFAULT_CFG, "FP8": mtq.FP8_DEFAULT_CFG}[algo]
    model = mtq.quantize(model, cfg, lambda m: m(torch.randint(3, 97, (2, 16))))
    export_hf_checkpoint(model, export_dir=str(folder))
    return model


@pytest.fixture(scope="module")
def nvfp4(tmp_path_factory):
    folder = tmp_path_factory.mktemp("modelopt-nvfp4")
    export(folder, "NVFP4")
    return folder


def stored(folder):
    from safetensors.torch import load_file
    return load_file(str(folder / "model.safetensors"))


def modelopt_dense(tensors, prefix):
    """ModelOpt's own dequantisation of one NVFP4 layer, in F32."""
    from modelopt.torch.quantization.qtensor import NVFP4QTensor
    packed = tensors[prefix + ".weight"]
    shape = torch.Size([packed.shape[0], packed.shape[1] * 2])
    q = NVFP4QTensor(shape, torch.float32, packed)
    return q.dequantize(dtype=torch.float32, scale=tensors[prefix + ".weight_scale"],
                        double_scale=tensors[prefix + ".weight_scale_2"], block_sizes={-1: 16})


def test_the_export_is_modelopts_nvfp4_layout(nvfp4):
    config = json.loads((nvfp4 / "config.json").read_text())["quantization_config"]
    assert config["quant_method"] == "modelopt" and config["quant_algo"] == "NVFP4"
    t = stored(nvfp4)
    assert t[LAYER + ".weight"].dtype == torch.uint8 and t[LAYER + ".weight_scale"].dtype == torch.float8_e4m3fn
    assert t[LAYER + ".weight_scale_2"].shape == torch.Size([])


def dense_weights(folder, dtype):
    return wl.WeightLoaderRegistry.create("local", dtype=dtype).get_weights(str(folder))


def test_every_layer_equals_modelopts_dequantisation_bit_for_bit(nvfp4):
    tensors = stored(nvfp4)
    layers = [k[:-len(".weight_scale_2")] for k in tensors if k.endswith(".weight_scale_2")]
    assert len(layers) == 14  # q, k, v, o, gate, up, down in each of 2 layers
    f32, bf16 = dense_weights(nvfp4, torch.float32), dense_weights(nvfp4, torch.bfloat16)
    assert not any(k.endswith((".weight_scale", ".weight_scale_2", ".input_scale")) for k in f32)
    for prefix in layers:
        want = modelopt_dense(tensors, prefix)
        got = f32[prefix + ".weight"]
        assert got.shape == want.shape and torch.equal(got.view(torch.int32), want.view(torch.int32)), prefix
        assert torch.equal(bf16[prefix + ".weight"], want.to(torch.bfloat16)), prefix


def test_hf_quant_config_json_alone_is_enough(nvfp4, tmp_path):
    """Exports before ModelOpt 0.2x put the config only in hf_quant_config.json."""
    for name in ("model.safetensors", "hf_quant_config.json"):
        shutil.copy(nvfp4 / name, tmp_path / name)
    config = json.loads((nvfp4 / "config.json").read_text())
    del config["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert torch.equal(dense_weights(tmp_path, torch.float32)[LAYER + ".weight"], modelopt_dense(stored(nvfp4), LAYER))


def test_as_stored_hands_over_the_packed_tensors(nvfp4):
    tensors = stored(nvfp4)
    weights = wl.WeightLoaderRegistry.create("local", quantized="as_stored").get_weights(str(nvfp4))
    for suffix in (".weight", ".weight_scale", ".weight_scale_2", ".input_scale"):
        got, want = weights[LAYER + suffix], tensors[LAYER + suffix]
        assert got.dtype == want.dtype and torch.equal(got.reshape(-1).view(torch.uint8), want.reshape(-1).view(torch.uint8)), suffix


def test_the_engine_runs_it_as_transformers_runs_modelopts_dense_weights(nvfp4):
    tensors = stored(nvfp4)
    dense = {k: v for k, v in tensors.items() if not k.endswith((".weight_scale", ".weight_scale_2", ".input_scale"))}
    for prefix in [k[:-len(".weight_scale_2")] for k in tensors if k.endswith(".weight_scale_2")]:
        dense[prefix + ".weight"] = modelopt_dense(tensors, prefix)
    config = transformers.AutoConfig.from_pretrained(nvfp4)
    del config.quantization_config
    reference = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    reference.config._attn_implementation = "eager"
    reference.load_state_dict(dense, strict=False)
    reference.tie_weights()
    llm = wl.LLM(str(nvfp4))
    for n in (1, 9):
        ids = sequence(n, seed=n)
        with torch.no_grad():
            want = reference(torch.tensor([ids])).logits[0].double().numpy()
        # Weights ten times transformers' initialisation give logits near 30 whose F32 sums, added in
        # another order, differ by up to 2e-5 of the row's scale (a wrong decode differs by far more).
        assert error(np.asarray(engine_logits(llm, ids)), want) < 10 * TOLERANCE


def test_modelopt_fp8_equals_its_scaled_values(tmp_path):
    export(tmp_path, "FP8")
    tensors = stored(tmp_path)
    w, s = tensors[LAYER + ".weight"], tensors[LAYER + ".weight_scale"]
    assert w.dtype == torch.float8_e4m3fn and s.numel() == 1
    assert torch.equal(dense_weights(tmp_path, torch.float32)[LAYER + ".weight"], w.float() * s.float())


def test_scales_that_do_not_match_the_weight_are_named(nvfp4, tmp_path):
    from safetensors.torch import save_file
    tensors = stored(nvfp4)
    tensors[LAYER + ".weight_scale"] = tensors[LAYER + ".weight_scale"][:, :5].contiguous()
    save_file(tensors, str(tmp_path / "model.safetensors"))
    shutil.copy(nvfp4 / "config.json", tmp_path / "config.json")
    with pytest.raises(wl.Error) as info:
        wl.WeightLoaderRegistry.create("local").get_weights(str(tmp_path))
    message = str(info.value)
    assert "model.safetensors" in message and LAYER + ".weight_scale" in message and "[64, 5]" in message
