"""Original all-MiniLM-L6-v2 vs CCD-trained MiniLM: CCED, SEAT, Bias-IR, CrowS/StereoSet (embedding variants),
utility probe, and the β ablation of the CCD paper's Table 7. Writes ``benchmarks/results/embedding_fairness.md``.

    .venv/bin/python benchmarks/embedding_fairness.py [--data-dir ../shared/data] [--train 96] [--quick]

Tuples: CDA (ADEPT + CDS pairs + 1,000 CDS name pairs, ADEPT neutral words kept) over the sentences of Bias-in-Bios
samples, GAP and BUG, polarity-checked; disjoint train / validation / held-out test tuples. Training follows the
paper (Adam, lr 5e-5, batch 32, one epoch, validate every ``--val-every`` steps, keep the best) at a reduced scale so
the whole run fits in about 20 minutes on a 2-core CPU; the scale is printed in the report.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from _stats import judge, summary_table  # noqa: E402

from faircl.data.counterfactual import CDA, AttributeLexicon, make_cda_tuples, read_texts  # noqa: E402
from faircl.eval import embedding_bias as eb  # noqa: E402

SOURCES = ("bias_in_bios_samples/*.csv", "gap_coreference/gap-development.tsv", "gap_coreference/gap-test.tsv",
           "gap_coreference/gap-validation.tsv", "bug_gender/gold_BUG.csv")
HEADLINE = ("cced", "seat_mean_abs_effect_size", "bias_ir_deviation", "bias_ir_male_ratio",
            "crows_pairs_embedding_stereo_score", "stereoset_embedding_ss", "stereoset_embedding_lms",
            "stereoset_embedding_icat", "utility_accuracy", "rep_distance")


def build_tuples(data_dir: Path, seed: int) -> tuple[list[tuple[str, ...]], str]:
    import glob

    texts = []
    for pattern in SOURCES:
        for p in sorted(glob.glob(str(data_dir / pattern))):
            texts += read_texts(p)
    lex = AttributeLexicon.gender(data_dir, "adept+cds+names")
    tuples, report = make_cda_tuples(texts, CDA(lex), split=True, min_words=5, max_words=40)
    random.Random(seed).shuffle(tuples)
    return tuples, str(report)


def speed(embedder: eb.TextEmbedder, texts: list[str]) -> dict[str, float]:
    out = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        embedder.dtype = dtype
        embedder(texts[:16])
        t0 = time.perf_counter()
        embedder(texts)
        out[name] = len(texts) / (time.perf_counter() - t0)
    embedder.dtype = torch.float32
    return out


def train_ccd(beta: float, tuples: dict[str, list[tuple[str, ...]]], args) -> tuple[object, float]:
    import lightning as L

    from faircl.data.base import FairDataModule
    from faircl.data.counterfactual import TupleDataset
    from faircl.methods.ccd import CCD
    from faircl.testing import quiet_trainer_kwargs

    class Tuples(FairDataModule):
        input_kind = "tuples"  # each x is the G + 1 versions of one text

        def load_splits(self):
            self.class_names, self.group_names = ["tuple", "unused"], ["male", "female"]
            return {k: TupleDataset(v, [0] * len(v), [-1] * len(v), num_classes=2, num_groups=2, source=k)
                    for k, v in tuples.items()}

        def report_counts(self, splits):
            pass

    L.seed_everything(42, verbose=False)
    dm = Tuples(batch_size=args.batch_size, seed=42)
    model = CCD(beta=beta, normalize=True, lr=args.lr, encoder="hf", encoder_kwargs={"model_dir": None})
    trainer = L.Trainer(**quiet_trainer_kwargs(max_epochs=1, val_check_interval=args.val_every,
                                               check_val_every_n_epoch=None, num_sanity_val_steps=0,
                                               precision=args.precision))
    t0 = time.perf_counter()
    trainer.fit(model, datamodule=dm)
    return model.eval(), time.perf_counter() - t0


def ccd_embed(model, batch_size: int = 64):
    @torch.no_grad()
    def embed(texts):
        return torch.cat([model.embed(list(texts[i:i + batch_size])).float() for i in range(0, len(texts), batch_size)])

    return embed


@torch.no_grad()
def rep_distance(model, original, neutral: list[str]) -> float:
    return float((ccd_embed(model)(neutral) - original(neutral)).norm(dim=1).mean())


def fmt(v) -> str:
    return "—" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("FAIRCL_DATA", str(REPO.parent / "shared" / "data")))
    ap.add_argument("--train", type=int, default=96, help="training tuples (one epoch)")
    ap.add_argument("--val", type=int, default=32)
    ap.add_argument("--test", type=int, default=100, help="held-out tuples for CCED")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--val-every", type=int, default=3)
    ap.add_argument("--betas", default="0,0.5,1,1.5")
    ap.add_argument("--precision", default="32-true", help="training precision (evaluation is fp32)")
    ap.add_argument("--permutations", type=int, default=10000)
    ap.add_argument("--seat-max", type=int, default=16, help="examples per SEAT set (None = all)")
    ap.add_argument("--crows-max", type=int, default=60)
    ap.add_argument("--stereoset-max", type=int, default=60)
    ap.add_argument("--bias-ir-queries", type=int, default=28)
    ap.add_argument("--utility-per-class", type=int, default=5, help="Bias-in-Bios samples per profession")
    ap.add_argument("--quick", action="store_true", help="tiny scale smoke run (not for the report)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "embedding_fairness.md"))
    args = ap.parse_args()
    if args.quick:
        args.train, args.val, args.test, args.val_every, args.betas, args.permutations = 64, 32, 32, 1, "1", 200
        args.seat_max, args.crows_max, args.stereoset_max, args.bias_ir_queries = 8, 10, 10, 14
    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise SystemExit(f"data directory {data_dir} not found (pass --data-dir or set FAIRCL_DATA)")
    start = time.perf_counter()
    torch.manual_seed(0)

    tuples, polarity = build_tuples(data_dir, seed=42)
    need = args.train + args.val + args.test
    if len(tuples) < need:
        raise SystemExit(f"only {len(tuples)} tuples, {need} needed")
    test = tuples[:args.test]
    val = tuples[args.test:args.test + args.val]
    train = tuples[args.test + args.val:need]
    print(polarity, f"\nusing train {len(train)} / val {len(val)} / held-out test {len(test)} tuples", flush=True)

    original = eb.TextEmbedder(None)
    sp = speed(original, [s for t in test[:32] for s in t][:64])
    print(f"MiniLM speed: fp32 {sp['fp32']:.0f} sentences/s, bf16 {sp['bf16']:.0f} sentences/s", flush=True)
    subset = dict(seat_max_examples=args.seat_max or None, crows_max=args.crows_max or None,
                  stereoset_max=args.stereoset_max or None, bias_ir_max_queries=args.bias_ir_queries or None,
                  utility_per_class=args.utility_per_class or None)

    def evaluate(name, embed, embedder=None):
        t0 = time.perf_counter()
        r = eb.evaluate_all(embed, data_dir, tuples=test, embedder=embedder, n_permutations=args.permutations,
                            **subset)
        print(f"evaluated {name} in {time.perf_counter() - t0:.0f}s: cced {r['cced']:.4f}, "
              f"SEAT |d| {r['seat_mean_abs_effect_size']:.3f}, utility {r['utility_accuracy']:.3f}", flush=True)
        return r

    results = {"original": evaluate("original", original, original)}
    results["original"]["rep_distance"] = 0.0
    train_info = {}
    for beta in [float(b) for b in args.betas.split(",")]:
        model, secs = train_ccd(beta, {"train": train, "val": val, "test": test}, args)
        name = f"CCD β={beta:g}"
        train_info[name] = (secs, float(model.rho), model.val_history, float(model.best_val_loss))
        print(f"trained {name} in {secs:.0f}s (ρ = {float(model.rho):.4f}, best val loss "
              f"{float(model.best_val_loss):.4f})", flush=True)
        if beta == 1.0:
            # The headline model is evaluated through its exported directory, as a user would.
            with tempfile.TemporaryDirectory() as tmp:
                model.save_pretrained(tmp)
                exported = eb.TextEmbedder(tmp)
                results[name] = evaluate(name, exported, exported)
        else:
            results[name] = evaluate(name, ccd_embed(model))
        results[name]["rep_distance"] = rep_distance(model, original, [t[-1] for t in test])
        del model

    total = time.perf_counter() - start
    write_report(Path(args.out), args, results, train_info, polarity, sp, total, len(tuples))
    print(f"total {total / 60:.1f} min; report written to {args.out}")


def embedding_summary(results: dict[str, dict[str, float]]) -> list[str]:
    """Summary table in the format shared by the fairness benchmarks (``benchmarks/_stats.py``).

    One training run per β (one seed): by the shared rule every verdict is *untestable* until the run is repeated
    over seeds; the table still states the baseline's bias and the measured change.
    """
    ccd = [c for c in results if c.startswith("CCD")]
    if "original" not in results or not ccd:
        return []
    name = "CCD β=1" if "CCD β=1" in results else ccd[-1]
    base, new = results["original"], results[name]
    rows = []
    for key, what in (("cced", "CCED"), ("seat_mean_abs_effect_size", "the mean absolute SEAT effect size")):
        if key in base and key in new and "utility_accuracy" in base:
            rows.append((f"CCD: {name} lowers {what} vs the original MiniLM", "CDA tuples, held-out test; "
                         "utility = Bias-in-Bios probe",
                         judge([base[key]], [new[key]], [base["utility_accuracy"]], [new["utility_accuracy"]],
                               constant_acc=1 / 28)))
    if not rows:
        return []
    return ["## Summary: do the paper's claims hold here?", "",
            "One run per β (a single seed), so by the shared verdict rule (`benchmarks/_stats.py`: paired seeds, "
            "95% t-intervals) every claim is *untestable* at this scale; ×100.", "", *summary_table(rows), ""]


def write_report(path: Path, args, results, train_info, polarity, sp, total, n_tuples) -> None:
    cols = list(results)
    lines = ["# Embedding fairness: all-MiniLM-L6-v2 before and after CCD", "",
             "Regenerate: `.venv/bin/python benchmarks/embedding_fairness.py" + (" --quick" if args.quick else "")
             + "`", ""]
    lines += embedding_summary(results)
    lines += [f"- Scale: {args.train} training tuples (one epoch, batch {args.batch_size} → "
              f"{args.train // args.batch_size} steps, Adam lr {args.lr:g}, validation every {args.val_every} steps "
              f"on {args.val} tuples, best kept), {args.test} held-out test tuples for CCED; training precision "
              f"{args.precision}, evaluation fp32. The paper trains one epoch on ~43k LLM-made tuples (batch 32, lr "
              f"5e-5, ~1,350 steps); this machine's measured speed (below) allows only about a hundred tuples per β, so the "
              "learning rate is doubled. "
              f"{n_tuples} CDA tuples were made offline (Bias-in-Bios samples, GAP, BUG sentences); a slice is used.",
              f"- Evaluation subsets: SEAT first {args.seat_max} examples per set, {args.crows_max} CrowS-Pairs gender "
              f"pairs, {args.stereoset_max} StereoSet gender intrasentence items, {args.bias_ir_queries} Bias-IR "
              f"queries (all 7 categories), {args.utility_per_class or 10} Bias-in-Bios samples per profession (28) for the "
              "utility probe (5-fold).",
              f"- Tuple quality: {polarity}",
              f"- Measured MiniLM encoding speed on this machine (same batch, side by side): fp32 "
              f"{sp['fp32']:.0f} sentences/s, bf16 {sp['bf16']:.0f} sentences/s (ratio {sp['bf16'] / sp['fp32']:.2f}×).",
              f"- Total wall time {total / 60:.1f} min.",
              "- ρ is the median attribute-to-neutral distance of the original encoder over the training tuples "
              "(the paper's 'variance' underflows the kernel): " + ", ".join(
                  f"{k}: ρ = {v[1]:.4f}" for k, v in train_info.items()),
              "- CrowS-Pairs / StereoSet numbers are the **embedding-similarity variants** (MiniLM has no masked-LM "
              "head), not the paper's masked-LM scores: see `faircl/eval/embedding_bias.py`.", ""]
    lines += ["## Headline and β ablation (paper Table 7 varies β ∈ {0, 0.5, 1, 1.5})", "",
              "| metric | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    arrows = {"cced": "↓", "seat_mean_abs_effect_size": "↓", "bias_ir_deviation": "↓", "bias_ir_male_ratio": "→0.5",
              "crows_pairs_embedding_stereo_score": "→50", "stereoset_embedding_ss": "→50",
              "stereoset_embedding_lms": "↑", "stereoset_embedding_icat": "↑", "utility_accuracy": "↑",
              "rep_distance": "(neutral drift)"}
    for k in HEADLINE:
        lines.append(f"| {k} {arrows.get(k, '')} | " + " | ".join(fmt(results[c].get(k)) for c in cols) + " |")
    lines += ["", "## SEAT gender tests (effect size, permutation p-value)", "",
              "| test | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name in eb.SEAT_GENDER_TESTS:
        row = [f"{results[c][f'seat/{name}/effect_size']:.3f} (p={results[c][f'seat/{name}/p_value']:.3f})"
               for c in cols]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    lines += ["", "## Bias-IR male ratio of the top-10 per category (0.5 = balanced)", "",
              "| category | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for k in sorted(k for k in results["original"] if k.startswith("bias_ir/")):
        lines.append(f"| {k.split('/')[1]} | " + " | ".join(fmt(results[c].get(k)) for c in cols) + " |")
    lines += ["", "## Training", "", "| run | seconds | ρ | best val loss | validation losses (step: loss) |",
              "|---|---:|---:|---:|---|"]
    for k, (secs, rho, hist, best) in train_info.items():
        lines.append(f"| {k} | {secs:.0f} | {rho:.4f} | {best:.4f} | "
                     + ", ".join(f"{s}: {v:.4f}" for s, v in hist) + " |")
    base = results["original"]
    main_name = "CCD β=1" if "CCD β=1" in results else cols[-1]
    ccd = results[main_name]
    falls = ccd["cced"] < base["cced"]
    kept = ccd["utility_accuracy"] >= base["utility_accuracy"] - 0.02
    lines += ["", "## Do the paper's claims hold here?", "",
              f"- **CCED falls**: {'yes' if falls else 'no'} — {base['cced']:.4f} → {ccd['cced']:.4f} "
              f"({100 * (ccd['cced'] - base['cced']) / base['cced']:+.1f}%) on held-out tuples ({main_name}).",
              f"- **Utility kept** (profession probe accuracy within 2 points): {'yes' if kept else 'no'} — "
              f"{base['utility_accuracy']:.3f} → {ccd['utility_accuracy']:.3f}.",
              f"- SEAT mean |effect size|: {base['seat_mean_abs_effect_size']:.3f} → "
              f"{ccd['seat_mean_abs_effect_size']:.3f}; Bias-IR deviation from 0.5: {base['bias_ir_deviation']:.3f} → "
              f"{ccd['bias_ir_deviation']:.3f}.",
              "- β ablation: larger β keeps the neutral embeddings closer to the original (rep_distance column); "
              "the paper reports the utility (LMS) rising with β.", ""]
    seat_worse = ccd["seat_mean_abs_effect_size"] > base["seat_mean_abs_effect_size"]
    ir_worse = ccd["bias_ir_deviation"] > base["bias_ir_deviation"]
    if seat_worse or ir_worse:
        lines += ["Not every benchmark follows CCED here: " + " and ".join(
            s for s, w in (("the SEAT effect sizes grow", seat_worse), ("the Bias-IR deviation grows", ir_worse)) if w)
            + ". SEAT and Bias-IR compare *different* contents (names vs. career words, queries vs. documents), "
              "while CCD only equalises distances *within* a content; with a few steps on CDA tuples (names and "
              "pronouns swapped, the rest identical) this does not carry over to those association tests. The "
              "paper's SEAT gains come from ~1,350 steps on LLM-rewritten news text; this run does not reproduce them.",
            ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
