"""A Hugging Face cache snapshot given as a path, the way huggingface_hub.snapshot_download() returns it
and `weightloader download` prints it: every command and API reads it through its links into blobs/.

The cache is laid out as huggingface_hub lays it out (its file-system layout, restated: blobs named by
the sha256 of their content, snapshot files as relative links `../../blobs/<sha256>`, refs/<branch>
holding the commit, several revisions sharing blobs) around the tiny Llama of ../shared/testdata."""
import hashlib
import json
import os
import pathlib
import shutil
import subprocess

import pytest
import torch

import weightloader as wl

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("WL_CLI", str(ROOT / "build" / "weightloader"))
MAIN = "3579d71fd57e04f5a364d824d3a2ec3e913dbb67"
SHARDED = "1111111111111111111111111111111111111111"
GREEDY_FROM_BOS = [1031, 2185, 688, 2844]  # transformers' greedy continuation of [1] (the model's corpus.json)


def add_file(repo, commit, name, data):
    """blobs/<sha256> once, snapshots/<commit>/<name> a relative link to it."""
    blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    if not blob.exists():
        blob.write_bytes(data)
    link = repo / "snapshots" / commit / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))


@pytest.fixture(scope="module")
def cache(testdata, tmp_path_factory):
    """(cache dir, the original model dir, {revision: snapshot path})."""
    original = testdata / "hf-tiny-random-llama-2"
    root = tmp_path_factory.mktemp("hub")
    repo = root / "models--stas--tiny-random-llama-2"
    for name in ("config.json", "model.safetensors"):
        add_file(repo, MAIN, name, (original / name).read_bytes())
    # A second revision: the same tensors as shards + index (written by our CLI as save_pretrained would).
    sharded = root / "sharded"
    subprocess.run([CLI, "convert", str(original), str(sharded), "--shard-size", "30KB", "-q"], check=True,
                   capture_output=True)
    for f in sorted(sharded.iterdir()):
        add_file(repo, SHARDED, f.name, f.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(MAIN)
    (repo / "refs" / "sharded").write_text(SHARDED)
    return root, original, {rev: repo / "snapshots" / rev for rev in (MAIN, SHARDED)}


def cli(*args, check=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_the_layout_is_the_hubs(cache):
    root, _, snapshots = cache
    for snap in snapshots.values():
        for f in snap.iterdir():
            target = os.readlink(f)
            assert target.startswith("../../blobs/") and f.resolve().parent.name == "blobs"
            assert hashlib.sha256(f.read_bytes()).hexdigest() == f.resolve().name
    assert len(list(snapshots[SHARDED].glob("model-*.safetensors"))) > 1


@pytest.mark.parametrize("rev", [MAIN, SHARDED])
def test_every_command_takes_a_snapshot_path(cache, rev, tmp_path):
    _, original, snapshots = cache
    snap = snapshots[rev]
    inspect = json.loads(cli("inspect", snap, "--json").stdout)
    assert len(inspect["tensors"]) == 2 + 2 * 9 + 1
    assert json.loads(cli("load", snap, "--json", "-q").stdout)["missing"] == []
    cli("verify", snap)  # each blob's sha256 is its name
    cli("diff", snap, original)
    cli("convert", snap, tmp_path / "m.gguf", "--gguf-type", "f32", "-q")  # BF16 fits F32 exactly
    cli("diff", tmp_path / "m.gguf", original)
    out = cli("generate", "--model", snap, "--prompt-ids", "1", "-n", "4", "-t", "0").stdout
    assert out.split() == [str(i) for i in GREEDY_FROM_BOS]


def test_a_single_file_of_a_snapshot(cache):
    _, original, snapshots = cache
    cli("inspect", snapshots[MAIN] / "model.safetensors")
    cli("diff", snapshots[MAIN] / "model.safetensors", original / "model.safetensors")


def module_of(shapes):
    """A module whose state_dict has exactly these names and shapes (BF16 zeros)."""
    root = torch.nn.Module()
    for name, shape in shapes.items():
        *path, leaf = name.split(".")
        m = root
        for part in path:
            if part not in m._modules:
                m.add_module(part, torch.nn.Module())
            m = m._modules[part]
        m.register_parameter(leaf, torch.nn.Parameter(torch.zeros(shape, dtype=torch.bfloat16), requires_grad=False))
    return root


@pytest.mark.parametrize("rev", [MAIN, SHARDED])
def test_every_python_api_takes_a_snapshot_path(cache, rev):
    _, original, snapshots = cache
    snap = snapshots[rev]
    with wl.safe_open(str(original / "model.safetensors"), framework="pt") as f:
        expected = {k: f.get_tensor(k) for k in f.keys()}
    for loader in (wl.HfWeightLoader(), wl.LocalWeightLoader()):
        weights = loader.get_weights(str(snap))
        assert sorted(weights.keys()) == sorted(expected)
        assert torch.equal(weights["model.norm.weight"], expected["model.norm.weight"])
    module = module_of({k: v.shape for k, v in expected.items()})
    assert wl.load_into(module, str(snap)) == ([], [])
    assert all(torch.equal(module.state_dict()[k], v) for k, v in expected.items())
    if rev == MAIN:
        with wl.safe_open(str(snap / "model.safetensors"), framework="pt") as f:
            assert torch.equal(f.get_tensor("lm_head.weight"), expected["lm_head.weight"])
    ids = wl.LLM(str(snap)).generate([1], wl.SamplingParams(temperature=0, max_tokens=4))[0].token_ids
    assert ids == GREEDY_FROM_BOS


def test_a_model_id_reads_the_same_snapshots(cache, monkeypatch):
    root, _, snapshots = cache
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for rev in ("main", "sharded"):
        by_id = wl.HfWeightLoader(revision=rev).get_weights("stas/tiny-random-llama-2")
        by_path = wl.HfWeightLoader().get_weights(str(snapshots[MAIN if rev == "main" else SHARDED]))
        assert torch.equal(by_id["model.embed_tokens.weight"], by_path["model.embed_tokens.weight"])


def test_an_index_naming_a_file_outside_its_folder_is_refused(cache, tmp_path):
    """Names written inside a checkpoint stay confined, even when they reach an existing blob."""
    _, _, snapshots = cache
    snap = tmp_path / "snap"
    shutil.copytree(snapshots[SHARDED], snap)  # the files themselves: its relative links would dangle here
    index_link = snap / "model.safetensors.index.json"
    index = json.loads(index_link.read_text())
    shard = next(iter(index["weight_map"].values()))
    blob = (snapshots[SHARDED] / shard).resolve()
    index["weight_map"] = {k: os.path.relpath(blob, snap) if v == shard else v for k, v in index["weight_map"].items()}
    index_link.unlink()
    index_link.write_text(json.dumps(index))
    r = cli("inspect", snap, check=False)
    assert r.returncode == 1 and "[IndexInvalid]" in r.stderr and '".."' in r.stderr, r.stderr
