"""weightloader inside vLLM: load_format="weightloader".

vLLM calls register() at start-up in every process (the entry point in pyproject.toml, group
vllm.general_plugins). It registers

- the model loader "weightloader" (model_loader.WeightloaderModelLoader): any loader of
  WeightLoaderRegistry, named in model_loader_extra_config, fills vLLM's own model classes;
- for a checkpoint that is not a Hugging Face directory or model id (GGUF, llama2.c, Meta, custom
  binary, an http(s) or s3 URL), EngineArgs gives vLLM a directory with the config.json it needs
  in its place (model_dir), when load_format is "weightloader";
- the worker extension (worker.WeightloaderWorkerExtension, unless worker_extension_cls names
  another) through which refresh() reaches every worker.

    vllm.LLM(model="model.gguf", load_format="weightloader",
             model_loader_extra_config={"weight_loader": "gguf", "weight_loader_kwargs": {"dtype": "bfloat16"}})
"""


def refresh(llm, newer, since=None):
    """A vllm.LLM started with load_format="weightloader" brought up to the checkpoint `newer`,
    reading only the tensors that changed: see refresh_engine.refresh."""
    from .refresh_engine import refresh as run
    return run(llm, newer, since)


def register():
    """Registers the load format with vLLM, the model directory for other checkpoints and the worker
    extension (idempotent)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor import model_loader as vllm_loaders

    from .model_loader import LOAD_FORMAT, WeightloaderModelLoader

    if vllm_loaders._LOAD_FORMAT_TO_MODEL_LOADER.get(LOAD_FORMAT) is not WeightloaderModelLoader:
        vllm_loaders.register_model_loader(LOAD_FORMAT)(WeightloaderModelLoader)
    if not getattr(EngineArgs.create_engine_config, "_weightloader", False):
        EngineArgs.create_engine_config = _with_model_dir(EngineArgs.create_engine_config)


def _with_model_dir(create_engine_config):
    """EngineArgs.create_engine_config that first puts a prepared directory in place of a checkpoint
    vLLM cannot read a config from (the one seam before vLLM reads the model path), and gives the
    workers weightloader's extension when no other is asked for."""
    import functools

    from .model_loader import LOAD_FORMAT, WeightloaderModelLoader
    from .refresh_engine import EXTENSION

    @functools.wraps(create_engine_config)
    def wrapped(self, *args, **kwargs):
        if self.load_format == LOAD_FORMAT:
            source = str(self.model)
            loader = WeightloaderModelLoader.for_extra_config(self.model_loader_extra_config)
            self.model = loader.vllm_model(source)
            if self.model != source and self.tokenizer in (None, source):
                self.tokenizer = self.model
            self.worker_extension_cls = self.worker_extension_cls or EXTENSION
        return create_engine_config(self, *args, **kwargs)
    wrapped._weightloader = True
    return wrapped
