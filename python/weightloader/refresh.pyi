from typing import Any

import torch

class RefreshReport(dict[str, Any]):
    """The load of the changed tensors (the LoadReport's items) with changed, unchanged, unrecorded;
    items, also attributes."""

    def __getattr__(self, name: str) -> Any: ...
    changed: list[str]
    unchanged: int
    unrecorded: list[str]

DIGESTS_KEY: str

def recorded_digests(source: Any) -> dict[str, str]: ...
def changed_tensors(names: list[str], new: dict[str, str], held: dict[str, str]) -> tuple[list[str], list[str]]: ...
def refresh_report(report: Any, changed: list[str], total: int, unrecorded: list[str]) -> RefreshReport: ...
def refresh(module: torch.nn.Module, newer: Any, since: Any = ..., loader: Any = ..., progress: Any = ...,
            **kwargs: Any) -> RefreshReport: ...
