"""LLM over the C++ engine, with C++ loaders and with loaders written in Python."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest
import torch

import weightloader as wl

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ref(testdata):
    d = testdata / "llama2c-stories260K"
    return d, (d / "expected_greedy_t0_n200.txt").read_text().rstrip("\n")


Q = "model.layers.0.self_attn.q_proj.weight"  # rows of the fused qkv_proj the engine holds
GREEDY = wl.SamplingParams(temperature=0, max_tokens=200)


def llm(d, **kw):
    return wl.LLM(str(d / "stories260K.bin"), tokenizer=str(d / "tok512.bin"), **kw)


def test_a_cpp_loader_reproduces_run_c(ref):
    d, expected = ref
    out = llm(d).generate("", GREEDY)[0]
    assert out.full_text == expected and len(out.token_ids) == 200
    assert expected.endswith(out.text) and out.text  # the completion alone


class ViaModule(wl.BaseWeightLoader):
    """The engine module's load_weights maps checkpoint names onto fused parameters."""

    def get_weights(self, path):
        return wl.Llama2cWeightLoader().get_weights(path)


class PlainDict(wl.BaseWeightLoader):
    def get_weights(self, path):
        w = wl.Llama2cWeightLoader().get_weights(path)
        return {k: w[k] for k in w}


class SeedCustomBinary(wl.BaseWeightLoader):
    """The seed's CustomBinaryWeightLoader.load_weights, word for word: every parameter by name."""

    def get_weights(self, path):
        w = wl.Llama2cWeightLoader().get_weights(path)
        return {k: w[k] for k in w}

    def load_weights(self, model, weights):
        for name, param in model.named_parameters():
            if name in weights:
                param.data.copy_(weights[name])


class SeedLocal(wl.BaseWeightLoader):
    """The seed's LocalWeightLoader.load_weights: load_state_dict when the names agree."""

    def get_weights(self, path):
        return wl.Llama2cWeightLoader().get_weights(path)

    def load_weights(self, model, weights):
        if set(model.state_dict().keys()) == set(weights.keys()):
            model.load_state_dict(weights)
        else:
            raise AssertionError(f"names differ: {set(model.state_dict()) ^ set(weights.keys())}")


class SeedHf(wl.BaseWeightLoader):
    """The seed's HFWeightLoader.load_weights: model.load_state_dict(weights, strict=False)."""

    def get_weights(self, path):
        w = wl.Llama2cWeightLoader().get_weights(path)
        return {k: w[k] for k in w}

    def load_weights(self, model, weights):
        missing, unexpected = model.load_state_dict(weights, strict=False)
        assert missing == [] and unexpected == []


@pytest.mark.parametrize("loader", [ViaModule, PlainDict, SeedCustomBinary, SeedLocal, SeedHf])
def test_python_loaders_reproduce_run_c(ref, loader):
    d, expected = ref
    assert llm(d, weight_loader=loader).generate("", GREEDY)[0].full_text == expected


def test_registered_names_instances_and_vllm_spellings(ref):
    d, expected = ref
    if "test_llm_via_module" not in wl.WeightLoaderRegistry.list_available():
        wl.WeightLoaderRegistry.register("test_llm_via_module", ViaModule)
    a = llm(d, weight_loader="test_llm_via_module").generate("", GREEDY)[0]
    b = llm(d, weight_loader=ViaModule()).generate("", GREEDY)[0]
    c = llm(d, load_format="llama2c", model_loader_extra_config={"dtype": torch.float32}).generate("", GREEDY)[0]
    assert a.full_text == b.full_text == c.full_text == expected


def test_tensor_parallel_ranks_each_get_their_module(ref):
    d, _ = ref
    one = llm(d).generate("Once upon a time", GREEDY)[0]
    seen = []

    class Recording(ViaModule):
        def load_weights(self, model, weights):
            seen.append((model.wl_engine_rank, tuple(model.get_parameter(Q).shape)))
            return super().load_weights(model, weights)
    two = llm(d, weight_loader=Recording, tensor_parallel_size=2)
    full = llm(d, weight_loader=ViaModule).modules[0].get_parameter(Q).shape
    assert [r for r, _ in seen] == [0, 1] and seen[0][1][0] * 2 == full[0]
    assert two.generate("Once upon a time", GREEDY)[0].token_ids == one.token_ids


def test_a_parameter_left_unloaded_is_an_error_listing_it(ref):
    d, _ = ref

    class Partial(SeedCustomBinary):  # param.data.copy_ of every tensor but one
        def load_weights(self, model, weights):
            super().load_weights(model, {k: v for k, v in weights.items() if k != "model.norm.weight"})

    class PartialViaModule(PlainDict):  # the engine's own load, whose plan lists what it left
        def load_weights(self, model, weights):
            return model.load_weights({k: v for k, v in weights.items() if k != "model.norm.weight"})
    for loader in (Partial, PartialViaModule):
        with pytest.raises(ValueError, match=r"1 parameter.*model.norm.weight.*load_state_dict\(weights\) or model.load_weights"):
            llm(d, weight_loader=loader)
        llm(d, weight_loader=loader, strict=False)  # allowed when asked


def test_a_checkpoint_that_holds_nan_is_loaded_not_reported_missing(ref):
    d, _ = ref

    class WithNaN(SeedCustomBinary):
        def get_weights(self, path):
            w = super().get_weights(path)
            w["model.norm.weight"] = torch.full_like(w["model.norm.weight"], float("nan"))
            return w
    model = llm(d, weight_loader=WithNaN)
    assert torch.isnan(model.modules[0].get_parameter("model.norm.weight")).all()


@pytest.mark.parametrize("loader", [SeedLocal, SeedHf])
def test_the_seeds_load_state_dict_slices_for_each_rank(ref, loader):
    d, expected = ref
    out = llm(d, weight_loader=loader, tensor_parallel_size=2).generate("", GREEDY)[0]
    assert out.full_text == expected


def test_the_module_speaks_the_checkpoints_names(ref):
    d, _ = ref
    module = llm(d, weight_loader=ViaModule).modules[0]
    names = set(module.state_dict())
    assert names == set(wl.Llama2cWeightLoader().get_weights(str(d / "stories260K.bin")).keys())
    assert not any("qkv_proj" in n or "gate_up_proj" in n for n in names)
    q, k = module.get_parameter(Q), module.get_parameter(Q.replace("q_proj", "k_proj"))
    assert q.storage().data_ptr() == k.storage().data_ptr()  # rows of one fused block
    missing, unexpected = module.load_state_dict({Q: torch.zeros(q.shape)}, strict=False)
    assert sorted(missing) == sorted(names - {Q}) and unexpected == []
    assert torch.count_nonzero(q) == 0 and torch.count_nonzero(k) > 0
    with pytest.raises(RuntimeError, match="unexpected keys"):
        module.load_state_dict({"no.such.weight": torch.zeros(1)})
    with pytest.raises(wl.InvalidArgumentError, match=r"tensor 'model.norm.weight'.*\[ShapeMismatch\]"):
        module.load_state_dict({"model.norm.weight": torch.zeros(3)}, strict=False)


def test_a_whole_tensor_copy_under_tensor_parallelism_says_what_to_call(ref):
    d, _ = ref
    with pytest.raises(wl.InvalidArgumentError, match=r"rank 0: .*model.load_state_dict\(weights\)"):
        llm(d, weight_loader=SeedCustomBinary, tensor_parallel_size=2)


def test_the_module_aliases_the_engine_memory(ref):
    d, _ = ref
    m = llm(d, weight_loader=ViaModule)
    before = m.generate("Once", wl.SamplingParams(temperature=0, max_tokens=5))[0].token_ids
    with torch.no_grad():
        m.modules[0].model.embed_tokens.weight.mul_(-1)
    assert m.generate("Once", wl.SamplingParams(temperature=0, max_tokens=5))[0].token_ids != before


def test_streaming_and_several_prompts(ref):
    d, _ = ref
    pieces = []
    outs = llm(d).generate(["Once upon a time", "The cat"], wl.SamplingParams(temperature=0, max_tokens=10),
                           stream=pieces.append)
    assert len(outs) == 2 and all(len(o.token_ids) == 10 for o in outs)
    assert "".join(pieces) == outs[0].full_text + outs[1].full_text


def test_the_register_then_llm_example(ref):
    d, expected = ref
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "register_then_llm.py"), str(d), "200"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.startswith("Once upon a time")
