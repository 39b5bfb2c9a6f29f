"""The study of a ``faircl sweep``: its storage (:func:`open_storage`) and its pruner (:func:`build_pruner`), shared
by the sweep's workers and the trials' seeds (:mod:`faircl.cli.trial`)."""

from __future__ import annotations

import re
from typing import Any

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

from faircl.runs.user_error import UserError

__all__ = ["PRUNED_EXIT", "build_pruner", "open_storage", "safe_url"]

#: the exit status of a trial's seed that was pruned
PRUNED_EXIT = 3


def open_storage(url: str, heartbeat: int | None = None) -> RDBStorage:
    """Optuna's RDB storage (SQLite files wait up to a minute for a lock held by another worker).

    With ``heartbeat`` (seconds) a running trial that stops beating for twice as long is failed and retried."""
    kwargs: dict[str, Any] = {"engine_kwargs": {"connect_args": {"timeout": 60}}} if url.startswith("sqlite") else {}
    if heartbeat:
        kwargs.update(heartbeat_interval=heartbeat, grace_period=2 * heartbeat,
                      heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=3))
    try:
        return RDBStorage(url, **kwargs)
    except ImportError as err:
        cause = err.__cause__ or err
        raise UserError(f"--storage {safe_url(url)}: no database driver for it ({cause}); install one and name it in "
                       "the URL, e.g. pip install psycopg2-binary and postgresql+psycopg2://...") from None


def build_pruner(name: str) -> optuna.pruners.BasePruner:
    """``median`` (Optuna's MedianPruner after 2 trials and 1 epoch) or ``none``."""
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=1)
    return optuna.pruners.NopPruner()


def safe_url(url: str) -> str:
    """A database URL without its password, for messages."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)
