"""weightloader: load model weights from any common checkpoint format into torch modules."""
__version__: str
from .errors import (CancelledError as CancelledError, Error as Error, FormatError as FormatError,
                     InvalidArgumentError as InvalidArgumentError, IoError as IoError, NotFoundError as NotFoundError)
from .llm import (LLM as LLM, CompletionOutput as CompletionOutput, EngineModule as EngineModule,
                  RequestOutput as RequestOutput, SamplingParams as SamplingParams)
from .load_into import IncompatibleKeys as IncompatibleKeys, load_into as load_into
from .plan import plan as plan
from .refresh import RefreshReport as RefreshReport, refresh as refresh
from .safe_open import (TensorNotFoundError as TensorNotFoundError, UnknownFormatError as UnknownFormatError,
                        load as load, load_file as load_file, safe_open as safe_open, save as save,
                        save_file as save_file)
from .loaders import (BaseWeightLoader as BaseWeightLoader, CoreWeightLoader as CoreWeightLoader,
                      CustomBinaryWeightLoader as CustomBinaryWeightLoader, GgufWeightLoader as GgufWeightLoader,
                      HfWeightLoader as HfWeightLoader, Llama2cWeightLoader as Llama2cWeightLoader,
                      LoadReport as LoadReport, LocalWeightLoader as LocalWeightLoader,
                      MetaWeightLoader as MetaWeightLoader, Weights as Weights,
                      WeightLoaderRegistry as WeightLoaderRegistry, detect_name_scheme as detect_name_scheme)

__all__ = ["BaseWeightLoader", "CoreWeightLoader", "CustomBinaryWeightLoader", "GgufWeightLoader", "HfWeightLoader",
           "Llama2cWeightLoader", "LocalWeightLoader", "MetaWeightLoader", "detect_name_scheme", "LoadReport", "Weights", "WeightLoaderRegistry", "load_into", "plan",
           "refresh", "RefreshReport",
           "IncompatibleKeys", "Error", "FormatError", "NotFoundError", "InvalidArgumentError", "IoError",
           "CancelledError", "LLM", "SamplingParams", "RequestOutput", "CompletionOutput", "EngineModule",
           "safe_open", "load_file", "load", "save_file", "save", "TensorNotFoundError", "UnknownFormatError"]
