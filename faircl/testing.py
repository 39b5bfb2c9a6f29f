"""Helpers for fast, quiet runs in tests and notebooks."""

from __future__ import annotations

from typing import Any


def quiet_trainer_kwargs(**over: Any) -> dict[str, Any]:
    """Trainer keyword arguments for a fast, silent CPU run (no logger, checkpoints, progress bar or summary)."""
    kw: dict[str, Any] = dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                              enable_progress_bar=False, enable_model_summary=False, use_distributed_sampler=False)
    kw.update(over)
    return kw
