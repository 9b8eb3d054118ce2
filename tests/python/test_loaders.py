"""The seed's loader API: BaseWeightLoader, the registry, the built-in loaders, lazy weights."""
import numpy as np
import pytest
import torch

import weightloader as wl


def write_custom_binary(directory, tensors):
    """The seed's format: meta.txt (`name:d0,d1`) and model.bin (float32, back to back)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "meta.txt", "w") as meta, open(directory / "model.bin", "wb") as data:
        for name, t in tensors.items():
            meta.write(f"{name}:{','.join(str(d) for d in t.shape)}\n")
            data.write(t.astype(np.float32).tobytes())


class Tiny(torch.nn.Module):
    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2, dtype=dtype)
        self.register_buffer("scale", torch.zeros(2, dtype=dtype))


def tiny_tensors():
    return {"fc.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "fc.bias": np.array([7, 8], np.float32),
            "scale": np.array([0.5, 0.25], np.float32)}


def test_registry_lists_the_built_ins_sorted_and_refuses_a_taken_name():
    names = wl.WeightLoaderRegistry.list_available()
    assert {"hf", "local", "custom_binary", "gguf", "llama2c"} <= set(names)
    assert names == sorted(names)
    with pytest.raises(ValueError, match="already registered"):
        wl.WeightLoaderRegistry.register("local", wl.BaseWeightLoader)


def test_a_python_loader_registers_and_is_created_with_its_kwargs(tmp_path):
    class DictLoader(wl.BaseWeightLoader):
        def __init__(self, scale=1.0):
            self.scale = scale

        def get_weights(self, model_name_or_path):
            return {k: torch.from_numpy(v) * self.scale for k, v in tiny_tensors().items()}

    wl.WeightLoaderRegistry.register("test_dict_loader", DictLoader)
    assert "test_dict_loader" in wl.WeightLoaderRegistry.list_available()
    loader = wl.WeightLoaderRegistry.create("test_dict_loader", scale=2.0)
    model = Tiny(torch.bfloat16)
    report = loader.load_weights(model, loader.get_weights("anything"))
    assert model.fc.weight.dtype == torch.bfloat16
    assert model.fc.weight.float().tolist() == [[0, 2, 4], [6, 8, 10]]
    assert model.scale.float().tolist() == [1.0, 0.5]
    assert sorted(report.loaded) == ["fc.bias", "fc.weight", "scale"]
    assert {c["to"] for c in report.converted} == {"BF16"}


def test_the_decorator_form_registers_too():
    @wl.WeightLoaderRegistry.register("test_decorated_loader")
    class Decorated(wl.BaseWeightLoader):
        def get_weights(self, path):
            return iter([("fc.weight", np.ones((2, 3), np.float32))])
    assert wl.WeightLoaderRegistry.get("test_decorated_loader") is Decorated


def test_an_iterator_of_numpy_pairs_loads_non_strict_and_reports_what_is_missing():
    model = Tiny()
    loader = wl.BaseWeightLoader()
    report = loader.load_weights(model, iter([("fc.weight", np.full((2, 3), 3, np.float32))]), strict=False)
    assert model.fc.weight.tolist() == [[3, 3, 3], [3, 3, 3]]
    assert sorted(report.missing) == ["fc.bias", "scale"]
    with pytest.raises(ValueError, match="fc.bias"):
        loader.load_weights(model, iter([("fc.weight", np.ones((2, 3), np.float32))]))


def test_transposed_tensors_are_gathered_not_misread():
    model = Tiny()
    w = torch.arange(6, dtype=torch.float32).reshape(3, 2).t()  # non-contiguous view
    wl.BaseWeightLoader().load_weights(model, {"fc.weight": w, "fc.bias": torch.zeros(2), "scale": torch.zeros(2)})
    assert torch.equal(model.fc.weight, w)


def test_a_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\[3, 2\].*\[2, 3\]"):
        wl.BaseWeightLoader().load_weights(Tiny(), {"fc.weight": torch.zeros(3, 2), "fc.bias": torch.zeros(2),
                                                    "scale": torch.zeros(2)})


def test_custom_binary_weights_are_a_lazy_mapping(tmp_path):
    write_custom_binary(tmp_path / "m", tiny_tensors())
    loader = wl.CustomBinaryWeightLoader()
    weights = loader.get_weights(tmp_path / "m")
    assert isinstance(weights, wl.Weights)
    assert set(weights.keys()) == {"fc.weight", "fc.bias", "scale"} and len(weights) == 3 and "fc.bias" in weights
    assert weights["fc.weight"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert weights.info("fc.weight")["shape"] == [2, 3]
    with pytest.raises(KeyError):
        weights["nope"]
    model = Tiny()
    report = loader.load_weights(model, weights)
    assert report.bytes_read == 10 * 4 and model.fc.bias.tolist() == [7, 8]


def test_local_loader_file_pattern_and_a_missing_match(tmp_path):
    write_custom_binary(tmp_path / "m", tiny_tensors())
    with pytest.raises(FileNotFoundError, match="no file matches"):
        wl.LocalWeightLoader(file_pattern="*.safetensors").get_weights(tmp_path / "m")
    with pytest.raises(FileNotFoundError):
        wl.LocalWeightLoader().get_weights(tmp_path / "missing")


def test_kwargs_are_checked_and_dtype_takes_every_spelling(stories):
    with pytest.raises(ValueError, match="accepted: file_pattern"):
        wl.LocalWeightLoader(no_such_kwarg=1)
    for spelling in (torch.bfloat16, "bf16", "bfloat16", "BF16"):
        weights = wl.Llama2cWeightLoader(dtype=spelling).get_weights(stories)
        assert weights["model.norm.weight"].dtype == torch.bfloat16
    with pytest.raises(ValueError):
        wl.LocalWeightLoader(dtype="float12")


def test_stories260k_through_the_llama2c_loader(stories):
    weights = wl.Llama2cWeightLoader().get_weights(stories)
    assert len(weights) == 47 and weights.format == "llama2c"
    emb = weights["model.embed_tokens.weight"]
    assert emb.shape == (512, 64) and emb.dtype == torch.float32


def test_errors_carry_code_file_and_tensor(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes((10**12).to_bytes(8, "little") + b"{}")
    with pytest.raises(wl.Error) as info:
        wl.LocalWeightLoader().get_weights(bad)
    assert info.value.file == str(bad) and info.value.code


def test_a_progress_callable_sees_the_bytes_and_can_cancel(tmp_path):
    big = {"fc.weight": np.ones((2, 3), np.float32), "fc.bias": np.zeros(2, np.float32),
           "scale": np.ones(2, np.float32)}
    write_custom_binary(tmp_path / "m", big)
    loader = wl.CustomBinaryWeightLoader()
    weights = loader.get_weights(tmp_path / "m")
    seen = []
    loader.load_weights(Tiny(), weights, progress=lambda done, total: seen.append((done, total)) or True)
    assert seen and seen[-1] == (40, 40)
    with pytest.raises(wl.CancelledError):
        loader.load_weights(Tiny(), weights, progress=lambda done, total: False)


def test_the_loaders_strict_kwarg_is_the_default(tmp_path):
    write_custom_binary(tmp_path / "m", {"fc.weight": np.ones((2, 3), np.float32)})
    loose = wl.CustomBinaryWeightLoader(strict=False)
    report = loose.load_weights(Tiny(), loose.get_weights(tmp_path / "m"))
    assert sorted(report.missing) == ["fc.bias", "scale"]
    with pytest.raises(ValueError, match="missing"):
        loose.load_weights(Tiny(), loose.get_weights(tmp_path / "m"), strict=True)


def test_one_loader_serves_several_threads_each_with_its_own_call_options(tmp_path):
    """strict, progress and the device are the call's: a thread that loads with strict=False does not
    make another thread's strict load of the same loader pass (the loader is never changed)."""
    import threading
    from safetensors.torch import save_file

    save_file({"fc.weight": torch.randn(512, 1024), "fc.bias": torch.randn(512)}, str(tmp_path / "m.safetensors"))

    class Wider(torch.nn.Module):  # one parameter the checkpoint lacks
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(1024, 512)
            self.extra = torch.nn.Parameter(torch.full((4,), 3.0))

    loader = wl.CoreWeightLoader("local")
    weights = loader.get_weights(tmp_path / "m.safetensors")
    expected = weights["fc.weight"].clone()
    failures = []

    def run(lenient):
        for _ in range(15):
            m = Wider()
            try:
                loader.load_weights(m, weights, strict=False if lenient else None, progress=False)
                if not lenient:
                    failures.append("a strict load of a module with a missing parameter passed")
                elif not torch.equal(m.fc.weight.detach(), expected) or m.extra[0] != 3.0:
                    failures.append("a lenient load filled the wrong values")
            except Exception as e:  # noqa: BLE001 - the strict threads must fail, naming the parameter
                if lenient or "extra" not in str(e):
                    failures.append(f"{'lenient' if lenient else 'strict'}: {e}")

    threads = [threading.Thread(target=run, args=(i % 2 == 0,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    with pytest.raises(Exception, match="extra"):  # and the loader's own strictness is as it was
        loader.load_weights(Wider(), weights, progress=False)
