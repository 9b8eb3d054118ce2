"""Python's LLM over families beyond Llama: logits at every position equal those transformers
computed (../shared/testdata/hf-tiny-arch), in one process and with two tensor-parallel ranks."""
import json

import numpy as np
import pytest

import weightloader as wl


def worst_error(llm, folder):
    """The largest logit error over every position of every sequence, relative to the row's scale."""
    ref = json.loads((folder / "reference_logits.json").read_text())
    worst = 0.0
    for ids, want in zip(ref["sequences"], ref["logits"]):
        out = llm.generate(ids, wl.SamplingParams(temperature=0, max_tokens=1), return_logits=True)[0]
        got, want = np.array(out.logits), np.array(want)
        assert got.shape == want.shape
        scale = np.maximum(np.abs(want).max(axis=1), 1.0)
        worst = max(worst, float((np.abs(got - want).max(axis=1) / scale).max()))
    return worst


@pytest.mark.parametrize("family", ["gemma2", "phi3", "mixtral"])
@pytest.mark.parametrize("tp", [1, 2])
def test_logits_match_transformers(testdata, family, tp):
    folder = testdata / "hf-tiny-arch" / family
    llm = wl.LLM(str(folder), tensor_parallel_size=tp)
    assert llm.config["architecture"] == family
    assert worst_error(llm, folder) < 1e-5


def test_stop_tokens_come_from_the_config(testdata):
    # phi3's config.json names eos_token_id 2; the others name none, so nothing stops them early.
    assert wl.LLM(str(testdata / "hf-tiny-arch" / "phi3")).stop_token_ids == [2]
    assert wl.LLM(str(testdata / "hf-tiny-arch" / "qwen2")).stop_token_ids == []
