"""What faircl keeps out of a run's output: Lightning's warnings and log lines that carry no advice for a faircl
run."""

from __future__ import annotations

import logging

#: Lightning warnings that carry no advice for a faircl run (the datamodules choose workers and shard themselves;
#: evaluation never needs the checkpoint callback; a torch / Lightning deprecation inside Lightning itself; a run on a
#: machine that has SLURM but was not started by ``srun``: the cluster guide says when to use it).
QUIET = (r".*does not have many workers.*", r".*smaller than the logging interval.*", r".*LeafSpec.*is deprecated.*",
         r".*callbacks used to create the checkpoint need to be provided.*", r".*`srun` command is available.*",
         r".*args parameter is intended to run from within Python.*",
         # the metrics faircl logs are already global (torchmetrics states synced across processes; the stage is the
         # same on every rank; the train terms are logged with sync_dist): Lightning's advice to sync is moot
         r"(?s).*self\.log\('(val|test|train)/.*sync_dist=True.*", r"(?s).*self\.log\('stage'.*sync_dist=True.*")
#: Lines of Lightning's log that say nothing to a faircl user: the promotion of a hosted logging service, printed by
#: every Trainer without one, and the absent accelerators (a present GPU is still reported).
SILENT_PREFIXES = ("\N{ELECTRIC LIGHT BULB} Tip:", "GPU available: False", "TPU available: False",
                   "HPU available: False")


def quiet_lightning_log() -> None:
    """Filter the :data:`SILENT_PREFIXES` lines out of Lightning's rank-zero log, and its "Seed set to" line (the
    seed is in the run's config), once per process."""
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(getattr(f, "faircl_quiet", False) for f in log.filters):
        quiet = logging.Filter()
        quiet.filter = lambda record: not str(record.getMessage()).startswith(SILENT_PREFIXES)  # type: ignore
        quiet.faircl_quiet = True  # type: ignore[attr-defined]
        log.addFilter(quiet)
    logging.getLogger("lightning.fabric.utilities.seed").setLevel(logging.WARNING)
