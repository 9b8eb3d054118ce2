"""Register a loader written in Python, then generate with it, as vLLM users do:

    build-deps/venv/bin/python examples/python/register_then_llm.py ../shared/testdata/llama2c-stories260K

The loader reads llama2.c's stories260K through weightloader and hands the engine (name, tensor)
pairs; the engine's module maps them onto its fused parameters (qkv_proj, gate_up_proj)."""
import pathlib
import sys

import torch

import weightloader as wl


@wl.WeightLoaderRegistry.register("stories")
class StoriesLoader(wl.BaseWeightLoader):
    def __init__(self, dtype=torch.float32):
        self.dtype = dtype

    def get_weights(self, model_name_or_path):
        weights = wl.Llama2cWeightLoader().get_weights(model_name_or_path)
        return {name: weights[name].to(self.dtype) for name in weights}  # a plain Dict[str, Tensor]

    def load_weights(self, model, weights):
        model.load_weights(weights.items())  # vLLM's model.load_weights(iterable of (name, tensor))


def main(directory):
    directory = pathlib.Path(directory)
    llm = wl.LLM(model=str(directory / "stories260K.bin"), weight_loader="stories",
                 weight_loader_kwargs={"dtype": torch.float32}, tokenizer=str(directory / "tok512.bin"))
    out = llm.generate("Once upon a time", wl.SamplingParams(temperature=0, max_tokens=int(sys.argv[2]) if len(sys.argv) > 2 else 60))
    print(out[0].full_text)


if __name__ == "__main__":
    main(sys.argv[1])
