"""weightloader.plan: what loading a checkpoint will read and hold, per rank, before it reads."""
import os
from typing import Any, Union

from ._core import ModelPlan

def plan(model: Union[str, os.PathLike[str]], weight_loader: str = "auto", tensor_parallel_size: int = 1,
         expert_parallel: bool = False, mirror: bool = False, **kwargs: Any) -> ModelPlan: ...
