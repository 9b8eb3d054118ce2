from typing import Any

import torch

from .loaders import LoadReport

class RefreshReport(LoadReport):
    changed: list[str]
    unchanged: int
    unrecorded: list[str]

def changed_tensors(new_source: Any, old_source: Any) -> tuple[list[str], list[str]]: ...
def refresh_report(report: Any, changed: list[str], total: int, unrecorded: list[str]) -> RefreshReport: ...
def refresh(module: torch.nn.Module, newer: Any, since: Any = ..., loader: Any = ..., progress: Any = ...,
            **kwargs: Any) -> RefreshReport: ...
