from typing import Any

import torch

from .loaders import LoadReport

class RefreshReport(LoadReport):
    changed: list[str]
    unchanged: int
    unrecorded: list[str]

DIGESTS_KEY: str

def recorded_digests(source: Any) -> dict[str, str]: ...
def changed_tensors(names: list[str], new: dict[str, str], held: dict[str, str]) -> tuple[list[str], list[str]]: ...
def refresh_report(report: Any, changed: list[str], total: int, unrecorded: list[str]) -> RefreshReport: ...
def refresh(module: torch.nn.Module, newer: Any, since: Any = ..., loader: Any = ..., progress: Any = ...,
            **kwargs: Any) -> RefreshReport: ...
