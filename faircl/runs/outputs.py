"""What the ``faircl`` command writes: the config file of a command, no overwriting of an earlier run's outputs,
the files of ``faircl predict`` and the encoder folder of ``faircl export``."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import lightning as L
import torch
import torch.distributed as dist
from lightning.pytorch.callbacks import BasePredictionWriter

from faircl.checkpoints import CheckpointError, check_checkpoint
from faircl.runs.user_error import UserError
from faircl.methods.base import FairModule
from faircl.models.encoders import HFTextEncoder

KEEP = ("logits", "h", "z", "y", "a", "idx")


def guard_outputs(directory: str | Path | None, names: tuple[str, ...], overwrite: bool) -> None:
    """Refuse to write over the outputs of an earlier run in ``directory`` unless ``overwrite``."""
    if directory is None:  # no log folder (fast_dev_run): nothing is written
        return
    directory = Path(directory)
    existing = [n for n in names if (directory / n).exists() and (not (directory / n).is_dir()
                                                                  or any((directory / n).iterdir()))]
    if existing and not overwrite:
        raise UserError(f"{str(directory)!r} already holds {', '.join(existing)} of an earlier run; pass --overwrite "
                       "to replace them, or choose another --trainer.default_root_dir (with a logger, every run gets "
                       "its own version folder)")


def config_filename(subcommand: str, has_logger: bool) -> str:
    """The config file a command writes: ``config.yaml`` in its own version folder when a logger makes one;
    without a logger every command shares ``default_root_dir``, so each keeps its own file (``config.yaml`` for
    ``fit``, ``config.<command>.yaml`` otherwise) and a ``test`` never touches the ``fit`` config."""
    return "config.yaml" if has_logger or subcommand == "fit" else f"config.{subcommand}.yaml"


class PredictionFiles(BasePredictionWriter):
    """Writes the predictions of one ``predict`` run into its run folder.

    - ``predictions.pt``: a dict of tensors ``idx``, ``y``, ``a``, ``prediction``, ``probabilities`` and, when
      ``embeddings``, ``h`` (and ``z`` for contrastive methods), rows in split order;
    - ``predictions.csv``: ``idx, y, a, prediction, prob_<class>...``.

    Under several processes the ranks' rows are gathered to rank 0, which writes the one pair of files: each row
    once (the rows a distributed sampler repeats to even out the shards are dropped by ``idx``), in split order.
    """

    def __init__(self, split: str, embeddings: bool = True) -> None:
        super().__init__(write_interval="epoch")
        self.split, self.embeddings = split, embeddings
        self.written: list[Path] = []
        self.log_dir: str | None = None

    def on_predict_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.log_dir = trainer.log_dir  # a collective under several processes: read by every rank here

    def write_on_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, predictions: Any,
                           batch_indices: Any) -> None:
        batches = predictions[0] if predictions and isinstance(predictions[0], list) else predictions
        keep = KEEP if self.embeddings else ("logits", "y", "a", "idx")
        cols: dict[str, list[torch.Tensor]] = {}
        for out in batches:
            for k in keep:
                if isinstance(out.get(k), torch.Tensor):
                    cols.setdefault(k, []).append(out[k].detach().float().cpu() if k in ("logits", "h", "z")
                                                  else out[k].detach().cpu())
        data = {k: torch.cat(v) for k, v in cols.items()}
        if "logits" not in data:
            raise UserError(f"{type(pl_module).__name__} has no classifier output ('logits'): nothing to predict")
        if trainer.world_size > 1:
            data = _gather_rows(data)
            if not trainer.is_global_zero:
                return
        if "idx" in data:
            order = torch.argsort(data["idx"], stable=True)
            data = {k: v[order] for k, v in data.items()}
            first = torch.ones_like(data["idx"], dtype=torch.bool)
            first[1:] = data["idx"][1:] != data["idx"][:-1]  # a row the sampler repeated is kept once
            data = {k: v[first] for k, v in data.items()}
        probs = data["logits"].softmax(-1)
        data.update(probabilities=probs, prediction=probs.argmax(-1), split=self.split)
        out_dir = Path(self.log_dir or trainer.default_root_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        pt_path, csv_path = out_dir / "predictions.pt", out_dir / "predictions.csv"
        torch.save({k: v for k, v in data.items() if k != "logits"} | {"logits": data["logits"]}, pt_path)
        n = len(probs)
        with csv_path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["idx", "y", "a", "prediction", *[f"prob_{c}" for c in range(probs.shape[1])]])
            for r in range(n):
                w.writerow([_item(data, "idx", r), _item(data, "y", r), _item(data, "a", r),
                            int(data["prediction"][r]), *[f"{float(p):.6f}" for p in probs[r]]])
        self.written = [pt_path, csv_path]


def _gather_rows(data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every rank's columns concatenated in rank order (on every rank)."""
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, data)
    return {k: torch.cat([p[k] for p in parts]) for k in data}


def _item(data: dict[str, Any], key: str, r: int) -> Any:
    return int(data[key][r]) if key in data else ""


def export_encoder(ckpt_path: str | Path, out: str | Path, overwrite: bool = False) -> Path:
    """Save the encoder of a trained method (CCD or any method with a Hugging Face text encoder) as a Hugging Face /
    sentence-transformers folder."""
    ckpt_path, out = Path(ckpt_path), Path(out)
    if not ckpt_path.is_file():
        raise UserError(f"export: no such checkpoint file {str(ckpt_path)!r}")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UserError(f"export: {str(out)!r} is not empty; pass --overwrite or choose another --out")
    try:
        check_checkpoint(ckpt_path)  # no code runs from the file: a file holding code is refused in one line
    except CheckpointError as err:
        raise UserError(f"export: {err}") from None
    try:
        model = FairModule.load_from_checkpoint(ckpt_path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise UserError(f"export: cannot load {str(ckpt_path)!r}: {type(err).__name__}: {err}") from err
    if hasattr(model, "save_pretrained"):  # CCD: the encoder's folder plus its own record
        return Path(model.save_pretrained(out))
    enc = model.encoder
    if not isinstance(enc, HFTextEncoder):
        raise UserError(f"export: {type(model).__name__} has a {type(enc).__name__} encoder; only Hugging Face text "
                       "encoders (encoder: hf) are exported")
    return enc.save_pretrained(out)
