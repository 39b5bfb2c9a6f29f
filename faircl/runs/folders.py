"""The run folder, written and read in this one module: the record a finished run leaves (``run.json``,
:func:`write_record` / :func:`read_record`; a sweep seed's former ``result.json`` still reads), and what a
``faircl test`` run (or a finished sweep trial, or a bench run) left on disk, as the :class:`faircl.eval.tradeoff.Run`
that ``faircl compare`` and ``faircl bench`` decide from.

A run folder holds ``report.json`` (the test metrics, :func:`faircl.eval.report.read_report`; its ``meta.fit`` is the
record of the fit that made the checkpoint, its ``meta.rows`` names the per-row predictions), ``rows.npz`` (the
per-row predictions, :mod:`faircl.eval.row_predictions`) and, for a bench run of the embeddings suite,
``items.json`` (the per-item outputs). The seed and settings of a run are those of its fit: the report's fit record,
else the fit's ``config.yaml`` beside the checkpoint, else (noted in ``Run.source``) the run folder's own
``config.yaml``. The validation metrics of the checkpoint come from a sweep trial's record (``run.json``) or from the fit
run's ``metrics.csv`` (the row of the checkpoint's epoch). A run whose rows are a 1-NN's or a probe's
(``meta.rows.predictions``: ``knn`` / ``probe``) gets its accuracy, gaps and leakage from those rows. A run of
untrained weights (``faircl test --ckpt_path none``: its report's checkpoint is :data:`UNTRAINED`) is marked
``Run.untrained``; a file its report names but its folder lacks is in ``Run.missing``.

Nothing here decides anything: reading fails only on unreadable files (``ValueError`` naming the file).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from faircl.eval.report import read_report
from faircl.eval.row_predictions import fairness_of, flatten_config, read_rows
from faircl.eval.tradeoff import Run

__all__ = ["FORMER_RECORD", "RECORD", "UNTRAINED", "read_items", "read_record", "read_run", "run_files_without_report",
           "write_record"]

#: the checkpoint ``faircl test --ckpt_path none`` writes in its report (``meta.checkpoint``): the untrained weights
UNTRAINED = "none (untrained weights)"
#: files a ``faircl test`` run folder holds beside its ``report.json`` (a folder with one of them but no report was
#: deleted or interrupted halfway)
RUN_FILES = ("report.md", "report.png", "rows.npz")

def _val_from_metrics_csv(ckpt: Path) -> dict[str, float]:
    """Validation metrics logged in the epoch of ``ckpt`` (``epoch=E`` in its name) by its fit run."""
    m = re.search(r"epoch=(\d+)", ckpt.name)
    table = ckpt.parent.parent / "metrics.csv"
    if not m or not table.is_file():
        return {}
    found: dict[str, float] = {}
    with table.open() as fh:
        for row in csv.DictReader(fh):
            if row.get("epoch") == m.group(1):
                for k, v in row.items():
                    if k.startswith("val/") and v not in ("", None):
                        found[k[4:]] = float(v)
    return found


def _resolve_ckpt(text: str, run_dir: Path) -> Path | None:
    """The checkpoint file named in a report, found from the current directory or beside the run folder."""
    path = Path(text)
    if path.is_file():
        return path
    parts = path.parts
    if "lightning_logs" in parts:
        tail = Path(*parts[parts.index("lightning_logs"):])
        for base in (run_dir.parent.parent, *run_dir.parents):
            if (base / tail).is_file():
                return base / tail
    return None


def _fit_settings(data: dict[str, Any], run_dir: Path, ckpt: Path | None) -> tuple[dict[str, Any], Any, str]:
    """The flattened configuration and seed of the fit that made the run's checkpoint, and where they were read:
    the report's fit record (``faircl test`` copies it from the checkpoint), else the ``config.yaml`` of the fit run
    beside the checkpoint, else (with a note) the run folder's own ``config.yaml``."""
    fit = (data.get("meta") or {}).get("fit")
    if isinstance(fit, dict) and isinstance(fit.get("config"), dict):
        return dict(fit["config"]), fit.get("seed"), "fit record"
    for cfg_file, source in (((ckpt.parent.parent / "config.yaml") if ckpt is not None else None, "fit config"),
                             (run_dir / "config.yaml", "test config")):
        if cfg_file is not None and cfg_file.is_file():
            try:
                config = flatten_config(yaml.safe_load(cfg_file.read_text()) or {})
            except (OSError, yaml.YAMLError, AttributeError) as err:
                raise ValueError(f"{cfg_file}: not a readable config ({' '.join(str(err).split())})") from None
            return config, config.get("seed_everything"), f"{source} {cfg_file}"
    return {}, None, "nothing (no fit record, no config.yaml)"


def _metrics_from_rows(path: Path, test: dict[str, float], val: dict[str, float]
                       ) -> tuple[dict[str, float], dict[str, float]]:
    """The test and validation accuracy, gaps and leakage of a run whose rows are not its logits' (``knn`` or
    ``probe`` predictions), from those rows, so that its point on the front, its DTO and its verdicts judge the
    same predictions. Metrics the rows cannot give (recall@k, NMI, ...) stay the report's."""
    fields = read_rows(path)
    groups = 1 + max((int(np.max(f["a"])) for f in fields.values() if len(f["a"])), default=0)
    test = {**test, **fairness_of(fields["test"], groups)} if "test" in fields else test
    if "val" in fields:
        val = fairness_of(fields["val"], groups)
    return test, val


def _json(path: Path) -> Any:
    """The JSON of ``path``; ``ValueError`` naming the file when it is not readable JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not readable JSON ({err})") from None


def run_files_without_report(root: str | Path) -> dict[str, list[str]]:
    """The folders under ``root`` that hold files of a ``faircl test`` run (:data:`RUN_FILES`) but no
    ``report.json``: folder → the files found."""
    found: dict[str, list[str]] = {}
    for name in RUN_FILES:
        for path in sorted(Path(root).rglob(name)):
            if not (path.parent / "report.json").exists():
                found.setdefault(str(path.parent), []).append(name)
    return found


def read_run(report: str | Path) -> Run | None:
    """A :class:`~faircl.eval.tradeoff.Run` from a ``report.json`` (``None`` for a sweep trial that did not finish:
    interrupted or pruned).

    Raises:
        ValueError: the report, the trial's record or its fit's ``config.yaml`` is not readable (naming the file).
    """
    report = Path(report)
    run_dir = report.parent
    trial = None
    for parent in run_dir.parents:
        if re.fullmatch(r"trial_\d+", parent.name) and (parent / "trial_spec.json").is_file():
            if not (parent / "trial.json").is_file():
                return None  # an interrupted or pruned trial
            trial = _json(parent / "trial.json").get("trial")
            break
    data = _json(report)
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise ValueError(f"{report}: no 'metrics' (not the report of a `faircl test` run)")
    ckpt_text = str((data.get("meta") or {}).get("checkpoint", ""))
    ckpt = _resolve_ckpt(ckpt_text, run_dir) if ckpt_text else None
    config, seed, source = _fit_settings(data, run_dir, ckpt)
    val: dict[str, float] = {}
    record = read_record(run_dir.parent.parent) if trial is not None else None
    if record is not None:
        val = {k[4:]: float(v) for k, v in (record.get("val") or {}).items()}
    elif ckpt is not None:
        val = _val_from_metrics_csv(ckpt)
    rows_info = (data.get("meta") or {}).get("rows")
    rows = run_dir / rows_info["file"] if isinstance(rows_info, dict) and "file" in rows_info else None
    missing = (rows.name,) if rows is not None and not rows.is_file() else ()
    rows = None if missing else rows
    test = read_report(report)
    how = rows_info.get("predictions", "logits") if isinstance(rows_info, dict) else "logits"
    if rows is not None and how != "logits":
        test, val = _metrics_from_rows(rows, test, val)
    return Run(str(run_dir), None if seed is None else int(seed), config, test, val,
               str(ckpt) if ckpt is not None else ckpt_text, trial, rows=str(rows) if rows is not None else None,
               source=source, predictions=how, untrained=ckpt_text == UNTRAINED, missing=missing)


def read_items(folder: str | Path) -> dict[str, Any] | None:
    """The per-item outputs (``items.json``) a bench run of the embeddings suite wrote into its folder (``None``
    when it wrote none)."""
    path = Path(folder) / "items.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not readable JSON ({err})") from None


# ---------------------------------------------------------------------------------------------------- the record
#: the record a finished run leaves in its folder (``faircl bench`` and ``faircl sweep`` runs alike)
RECORD = "run.json"
#: the record of a sweep seed written by faircl 0.x before ``run.json``: still read
FORMER_RECORD = "result.json"


def write_record(folder: str | Path, record: Mapping[str, Any]) -> Path:
    """Write ``record`` as the folder's :data:`RECORD` (atomically: a reader sees the whole file or none)."""
    path = Path(folder) / RECORD
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(record), indent=2, default=str))
    tmp.replace(path)
    return path


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """The record of the run in ``folder`` (:data:`RECORD`, else :data:`FORMER_RECORD`), ``None`` when the run did not
    finish; ``ValueError`` naming the file when it is not readable JSON."""
    for name in (RECORD, FORMER_RECORD):
        path = Path(folder) / name
        if path.is_file():
            record = _json(path)
            if not isinstance(record, dict):
                raise ValueError(f"{path}: not a run record (a JSON object)")
            return record
    return None
