"""Training overhead of the fair text methods relative to plain cross-entropy, measured side by side in one run.

    .venv/bin/python benchmarks/overhead.py [--rounds 5] [--batches 30] [--quick]

Every method trains the same encoder (``TokenEncoder``: embedding 100 + bi-GRU 2 × 128) on the same data
(``SynthBios`` token ids, batch 64) for ``--batches`` steps per round; the methods are interleaved round-robin
(CE, ConFair, OneStageCL, Adv, DiverseAdv, CE, ...) so machine load affects all alike, and the median train-epoch
time of each is divided by CE's. Targets (Shen et al. 2021): ConFair ≤ 1.2× CE (no extra parameters), Adv ≤ 2× CE.
OneStageCL necessarily encodes two augmented views per row; its time per encoded view is reported too.

Writes ``benchmarks/results/overhead.md`` (text part, then the vision part from ``benchmarks/overhead_vision.py``'s
``main()`` when that file exists).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faircl.testing import quiet_trainer_kwargs  # noqa: E402

METHODS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "CE": ("CE", {}, False),
    "ConFair": ("ConFair", {"lambda_fair": 1.0, "temperature": 0.01}, False),
    "OneStageCL": ("OneStageCL", {"lambda_cs": 1.0, "gamma": 0.3}, True),
    "Adv": ("Adversarial", {"lambda_adv": 1.0, "conditional": True}, False),
    "DiverseAdv": ("DiverseAdversarial", {"lambda_adv": 1.0, "conditional": True, "n_adv": 3}, False),
}
TARGETS = {"ConFair": 1.2, "Adv": 2.0}


class _EpochTimer(Callback):
    def on_train_epoch_start(self, trainer, module) -> None:
        self.t0 = time.perf_counter()

    def on_train_epoch_end(self, trainer, module) -> None:
        self.seconds = time.perf_counter() - self.t0


def text_overhead(rounds: int, batches: int) -> list[dict[str, Any]]:
    import faircl.methods as M
    from faircl.data.synthetic import SynthBios

    dms = {}
    for views in (False, True):
        dm = SynthBios(n_train=64 * batches, n_val=64, n_test=64, batch_size=64, two_views=views, seed=0)
        dm._reported = True
        dm.setup()
        dms[views] = dm
    times: dict[str, list[float]] = {m: [] for m in METHODS}
    for r in range(rounds + 1):  # round 0 warms up (allocations, first-call overheads) and is not counted
        for name, (cls_name, kwargs, views) in METHODS.items():
            dm = dms[views]
            L.seed_everything(r, verbose=False)
            model = getattr(M, cls_name)(num_classes=dm.num_classes, num_groups=dm.num_groups,
                                         input_dim=dm.input_dim, encoder="tokens",
                                         encoder_kwargs={"embed_dim": 100, "hidden_dim": 128}, leakage=False,
                                         **kwargs)
            timer = _EpochTimer()
            trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, limit_train_batches=batches,
                                                       limit_val_batches=0, num_sanity_val_steps=0,
                                                       callbacks=[timer]))
            with contextlib.redirect_stdout(io.StringIO()):
                trainer.fit(model, datamodule=dm)
            if r > 0:
                times[name].append(timer.seconds)
    ce = statistics.median(times["CE"])
    rows = []
    for name, (_, _, views) in METHODS.items():
        med = statistics.median(times[name])
        ratio = med / ce
        row = {"part": "text", "method": name, "epoch_s": med, "ratio": ratio,
               "per_view_ratio": ratio / 2 if views else ratio, "target": TARGETS.get(name)}
        rows.append(row)
    return rows


def text_markdown(rows: list[dict[str, Any]], rounds: int, batches: int) -> list[str]:
    lines = [f"### Text methods (bi-GRU `TokenEncoder` on SynthBios, batch 64, {batches} steps per epoch, median of "
             f"{rounds} interleaved rounds)\n",
             "| method | train epoch (s) | × CE | × CE per encoded view | target | met |", "|---|---|---|---|---|---|"]
    for r in rows:
        target = r["target"]
        met = "" if target is None else ("yes" if r["ratio"] <= target else "**no**")
        lines.append(f"| {r['method']} | {r['epoch_s']:.2f} | {r['ratio']:.2f} | {r['per_view_ratio']:.2f} | "
                     f"{'' if target is None else f'≤ {target:g}×'} | {met} |")
    return lines


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 5 steps, no vision part")
    parser.add_argument("--no-vision", action="store_true", help="skip benchmarks/overhead_vision.py")
    parser.add_argument("--write", default=str(ROOT / "benchmarks" / "results" / "overhead.md"))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    if args.quick:
        args.rounds, args.batches, args.no_vision = 2, 5, True
    rows = text_overhead(args.rounds, args.batches)
    md = ["# Training overhead relative to cross-entropy\n",
          f"Regenerate: `python benchmarks/overhead.py{''.join(' ' + a for a in (argv or sys.argv[1:]))}`. All methods "
          "measured "
          "side by side in one process on the same encoder and data.\n"]
    md += text_markdown(rows, args.rounds, args.batches)
    for line in md[2:]:
        print(line)
    vision = ROOT / "benchmarks" / "overhead_vision.py"
    if vision.is_file() and not args.no_vision:
        spec = importlib.util.spec_from_file_location("overhead_vision", vision)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        vision_rows = module.main([])
        rows += [{"part": "vision", **r} for r in vision_rows or []]
        md.append("\n### Vision methods (from `benchmarks/overhead_vision.py`)\n")
        if vision_rows:
            keys = list(vision_rows[0])
            md += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
            md += ["| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r.values()) + " |"
                   for r in vision_rows]
    if args.write:
        Path(args.write).parent.mkdir(parents=True, exist_ok=True)
        Path(args.write).write_text("\n".join(md) + "\n")
        print(f"wrote {args.write}")
    return rows


if __name__ == "__main__":
    main()
