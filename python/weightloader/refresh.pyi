from typing import Any

import torch

from .loaders import LoadReport

class RefreshReport(LoadReport):
    changed: list[str]
    unchanged: int
    unrecorded: list[str]

def refresh(module: torch.nn.Module, newer: Any, since: Any = ..., loader: Any = ..., progress: Any = ...,
            **kwargs: Any) -> RefreshReport: ...
