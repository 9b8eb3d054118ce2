"""weightloader: load model weights from any common checkpoint format into torch modules.

    import weightloader as wl
    missing, unexpected = wl.load_into(model, "/models/llama")     # in place, no state dict
    weights = wl.LocalWeightLoader(file_pattern="*.safetensors").get_weights("/models/llama")
    wl.WeightLoaderRegistry.register("my_custom", MyLoader)
"""
import torch as _torch

# torch 2.3 is the first with every dtype the library maps (uint16..64 beside float8 and bfloat16)
# and with load_state_dict(assign=True); an older torch would fail later, deep inside a load.
if tuple(int(p) for p in _torch.__version__.split("+")[0].split(".")[:2]) < (2, 3):
    raise ImportError(f"weightloader needs torch 2.3 or newer; this is torch {_torch.__version__} "
                      "(scripts/setup.sh makes an environment with the pinned one)")

from . import _core  # noqa: E402,F401  (the C++ extension)

__version__ = _core.__version__  # project(weightloader VERSION x.y.z) in CMakeLists.txt, as pip's metadata has it
from .errors import (CancelledError, Error, FormatError, InvalidArgumentError, IoError,  # noqa: F401
                     NotFoundError)
from .llm import LLM, CompletionOutput, EngineModule, RequestOutput, SamplingParams  # noqa: F401
from .load_into import IncompatibleKeys, load_into  # noqa: F401
from .plan import plan  # noqa: F401
from .refresh import RefreshReport, refresh  # noqa: F401
from .safe_open import (TensorNotFoundError, UnknownFormatError, load, load_file, safe_open, save,  # noqa: F401
                        save_file)
from . import safetensors  # noqa: F401,E402  (the drop-in for the safetensors package: weightloader.safetensors)
from .loaders import (BaseWeightLoader, CoreWeightLoader, CustomBinaryWeightLoader, GgufWeightLoader,  # noqa: F401
                      HfWeightLoader, Llama2cWeightLoader, LoadReport, LocalWeightLoader, MetaWeightLoader, Weights,
                      WeightLoaderRegistry, detect_name_scheme)

__all__ = ["BaseWeightLoader", "CoreWeightLoader", "CustomBinaryWeightLoader", "GgufWeightLoader", "HfWeightLoader",
           "Llama2cWeightLoader", "LocalWeightLoader", "MetaWeightLoader", "detect_name_scheme", "LoadReport", "Weights", "WeightLoaderRegistry", "load_into", "plan",
           "refresh", "RefreshReport",
           "IncompatibleKeys", "Error", "FormatError", "NotFoundError", "InvalidArgumentError", "IoError",
           "CancelledError", "LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "EngineModule",
           "safe_open", "load_file", "load", "save_file", "save", "TensorNotFoundError", "UnknownFormatError"]
