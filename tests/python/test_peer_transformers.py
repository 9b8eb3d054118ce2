"""transformers (the pinned release) loads what `weightloader convert` writes, and computes what the
originals' own code computed: llama2.c's run.c for stories260K, transformers itself for a Hugging
Face model taken through GGUF and back."""
import json
import os
import pathlib
import subprocess

import pytest
import torch

transformers = pytest.importorskip("transformers")

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))


@pytest.fixture(scope="module", autouse=True)
def cli():
    if not CLI.is_file():
        pytest.skip(f"the CLI is not built at {CLI}")


def convert(src, out, *args):
    done = subprocess.run([str(CLI), "convert", str(src), str(out), "-q", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def run_c_logits(path):
    """{position: (token fed, 512 logits)} from run.c's expected_logits_first4.txt."""
    blocks, pos = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("pos "):
            _, pos, _, token = line.split()
            pos = int(pos)
            blocks[pos] = (int(token), [])
        elif line.strip():
            blocks[pos][1].append(float(line))
    return blocks


def test_transformers_runs_stories260k_converted_from_llama2c_as_run_c_does(testdata, tmp_path):
    """llama2.c's checkpoint written as a Hugging Face directory (q/k rows into transformers' rotary
    layout, config.json from the header) gives run.c's logits under transformers' LlamaForCausalLM."""
    out = convert(testdata / "llama2c-stories260K" / "stories260K.bin", tmp_path / "stories-hf")
    model = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    expected = run_c_logits(testdata / "llama2c-stories260K" / "expected_logits_first4.txt")
    tokens = [expected[p][0] for p in sorted(expected)]
    with torch.no_grad():
        logits = model(torch.tensor([tokens])).logits[0]
    for p in sorted(expected):
        want = torch.tensor(expected[p][1])
        assert logits[p].shape == want.shape
        assert torch.allclose(logits[p], want, atol=1e-4, rtol=0), (p, (logits[p] - want).abs().max())


def test_a_model_through_gguf_and_back_gives_transformers_the_same_logits(testdata, tmp_path):
    """hf-tiny-random-llama-2 (BF16) converted to GGUF (F32) and back to a Hugging Face directory:
    transformers' logits equal those it computes on the original, for the corpus's inputs."""
    original = testdata / "hf-tiny-random-llama-2"
    gguf = convert(original, tmp_path / "tiny.gguf", "--gguf-type", "f32", "--no-tokenizer")
    back = convert(gguf, tmp_path / "tiny-hf")
    cases = json.loads((original / "corpus.json").read_text())["model_cases"]
    a = transformers.AutoModelForCausalLM.from_pretrained(original, dtype=torch.float32).eval()
    b = transformers.AutoModelForCausalLM.from_pretrained(back, dtype=torch.float32).eval()
    for case in cases:
        ids = torch.tensor([case["input_ids"]])
        with torch.no_grad():
            assert torch.equal(a(ids).logits, b(ids).logits), case
