"""Runs vLLM (the real one, on the CPU) on each spec of a JSON list and prints one JSON line per spec:
{"tokens": greedy token ids per prompt, "params": {name: sha256 of its bytes as loaded}} or
{"error": the exception's text}. A separate process per run of this script keeps vLLM's engine
and memory out of pytest. With one rank, vLLM's engine and worker run in this process, so the
parameters are read right after the load, before vLLM's CPU backend repacks the linear weights
for its GEMM kernels (process_weights_after_loading, which empties the parameters it packs).

    python vllm_run.py '[{"model": DIR, "load_format": "weightloader", "extra": {...}, ...}]'

Spec keys: model, load_format (default "auto"), extra (model_loader_extra_config), config_format,
dtype (default "float32"), max_model_len, block_size (the KV cache's, which prefix caching reuses whole),
tp (tensor_parallel_size), prompts (lists of token ids), max_tokens,
logprobs (top N per generated token), setup (Python code run first: a test registers its own loader there),
refresh (a list of {"newer": path, "since": path or absent}: weightloader.vllm_plugin.refresh each in
turn after the first generation, each followed by a generation; results under "refreshes").
"""
import gc
import hashlib
import json
import os
import sys

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process
_LOADED = []  # digests of each model's parameters as its loader left them


def digests(model):
    import torch
    return {name: hashlib.sha256(p.detach().contiguous().view(-1).view(torch.uint8).numpy()).hexdigest()
            for name, p in model.named_parameters()}


def _record_loaded_parameters():
    from vllm.model_executor.model_loader import base_loader
    process = base_loader.process_weights_after_loading

    def recording(model, *args, **kwargs):
        _LOADED.append(digests(model))
        return process(model, *args, **kwargs)
    base_loader.process_weights_after_loading = recording


def run(spec):
    from vllm import LLM
    kwargs = dict(model=spec["model"], skip_tokenizer_init=True, dtype=spec.get("dtype", "float32"),
                  max_model_len=spec.get("max_model_len"), enforce_eager=True, load_format=spec.get("load_format", "auto"),
                  tensor_parallel_size=spec.get("tp", 1), seed=0,
                  distributed_executor_backend="uni" if spec.get("tp", 1) == 1 else "mp")
    if spec.get("extra") is not None:
        kwargs["model_loader_extra_config"] = spec["extra"]
    if spec.get("block_size"):
        kwargs["block_size"] = spec["block_size"]
    if spec.get("config_format"):
        kwargs["config_format"] = spec["config_format"]
    if spec.get("tp", 1) > 1:  # vLLM's CPU workers bind to NUMA nodes, one each; this machine may have one
        cpus = sorted(os.sched_getaffinity(0))
        per = max(1, len(cpus) // spec["tp"])
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = "|".join(
            ",".join(str(c) for c in cpus[r * per:(r + 1) * per] or cpus[-1:]) for r in range(spec["tp"]))
    llm = LLM(**kwargs)
    try:
        result = generate(llm, spec)
        if spec.get("tp", 1) == 1:
            result["params"] = _LOADED[-1]
        if spec.get("refresh"):
            result["refreshes"] = [refresh(llm, spec, step) for step in spec["refresh"]]
        return result
    finally:
        del llm
        gc.collect()


def generate(llm, spec):
    """{"tokens": greedy token ids per prompt} and, when spec asks for logprobs=N, "logprobs": per
    prompt, per generated token, the top N [token, logprob] pairs vLLM gives."""
    from vllm import SamplingParams
    prompts = [{"prompt_token_ids": p} for p in spec.get("prompts", [[1, 5, 7, 9]])]
    outs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=spec.get("max_tokens", 8), detokenize=False,
                                                 logprobs=spec.get("logprobs")), use_tqdm=False)
    result = {"tokens": [list(o.outputs[0].token_ids) for o in outs]}
    if spec.get("logprobs"):
        result["logprobs"] = [[sorted([t, lp.logprob] for t, lp in step.items()) for step in o.outputs[0].logprobs]
                              for o in outs]
    return result


def refresh(llm, spec, step):
    """weightloader.vllm_plugin.refresh to step["newer"] (since step["since"]), then a generation:
    {"report": the RefreshReport, "tokens", "logprobs"}, or {"error", "tokens", ...} when it refused."""
    from weightloader.vllm_plugin import refresh as refresh_engine
    try:
        report = {"report": refresh_engine(llm, step["newer"], step.get("since"))}
    except Exception as e:  # noqa: BLE001 (the test reads the error)
        report = {"error": f"{type(e).__name__}: {e}"}
    return {**report, **generate(llm, spec)}


def main():
    specs = json.loads(sys.argv[1])
    _record_loaded_parameters()
    for spec in specs:
        if spec.get("setup"):
            exec(spec["setup"], {"__name__": "vllm_run_setup"})  # noqa: S102 (a test's own code)
        try:
            result = run(spec)
        except Exception as e:  # noqa: BLE001 (the test reads the error)
            result = {"error": f"{type(e).__name__}: {e}"}
        print("VLLM_RUN " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
