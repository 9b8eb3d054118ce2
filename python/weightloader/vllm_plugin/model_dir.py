"""The Hugging Face-shaped directory vLLM is given for a checkpoint that is not one.

vLLM reads config.json from the model path itself, in several places, before any model loader runs
(speculator detection, the model config, generation and tokenizer settings), so a GGUF or llama2.c
file, a Meta or custom-binary folder, or an http(s)/s3 URL never reaches a loader. With
load_format="weightloader", EngineArgs hands vLLM a directory of weightloader's instead: the
checkpoint's own config.json (a remote Hugging Face directory's, fetched) or the one weightloader's
engine derives from what the checkpoint says (GGUF keys, the llama2.c header, params.json), beside
weightloader_source.json naming the checkpoint, which the model loader then reads. The directory is
under the cache (WL_VLLM_DIR, else $XDG_CACHE_HOME/weightloader/vllm), one per checkpoint and
loader, written under a temporary name and renamed, so concurrent starts agree."""
import hashlib
import json
import os
import shutil
import tempfile

from .. import _core
from ..errors import _from_core

SOURCE_FILE = "weightloader_source.json"


def is_hf_model(source):
    """A local directory with config.json, or a model id (org/name) that is not a local path."""
    if os.path.isdir(source):
        return os.path.isfile(os.path.join(source, "config.json"))
    return looks_like_model_id(source)


def looks_like_model_id(source):
    parts = source.split("/")
    return (len(parts) == 2 and all(parts) and not source.startswith((".", "~")) and "://" not in source
            and not os.path.exists(source))


def source_of(model_dir):
    """The checkpoint a prepared directory stands for, or None for any other directory."""
    path = os.path.join(model_dir, SOURCE_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)["source"]


def prepare(source, loader, loader_spec):
    """The directory vLLM is given for `source`, read with `loader` (a BaseWeightLoader);
    loader_spec (the loader's name and kwargs, as text) tells directories of one checkpoint apart."""
    key = hashlib.sha256(json.dumps([os.path.abspath(source) if os.path.exists(source) else source, loader_spec],
                                    sort_keys=True, default=str).encode()).hexdigest()[:24]
    root = os.environ.get("WL_VLLM_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weightloader", "vllm")
    final = os.path.join(root, key)
    config = config_json(source, loader)
    if os.path.isfile(os.path.join(final, "config.json")) and source_of(final) == source:
        with open(os.path.join(final, "config.json"), encoding="utf-8") as f:
            if f.read() == config:
                return final
    os.makedirs(root, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{key}-", dir=root)
    for name, text in (("config.json", config), (SOURCE_FILE, json.dumps({"source": source}))):
        with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
            f.write(text)
    try:
        os.rename(staging, final)
    except OSError:  # another start made it first (or an old one is there): replace it whole
        old = tempfile.mkdtemp(prefix=f".{key}-old-", dir=root)
        os.rename(final, os.path.join(old, "dir"))
        os.rename(staging, final)
        shutil.rmtree(old, ignore_errors=True)
    return final


def config_json(source, loader):
    """The checkpoint's config.json text, or the one weightloader's engine derives from it."""
    weights = loader.get_weights(source)
    metadata = weights.metadata() if hasattr(weights, "metadata") else {}
    if metadata.get("config.json"):
        return metadata["config.json"]
    if not hasattr(weights, "_source"):
        raise _from_core("ConfigMissing", f"{source}: {type(loader).__name__} gives no config.json, and vLLM needs one: "
                         "put the model's config.json beside the checkpoint", source, "", False)
    return _core.hf_config_json(weights._source)

