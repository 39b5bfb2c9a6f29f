"""The embedding benchmark (``embedding_fairness.py``) as ``faircl bench`` invocations: CCD (β = 1) on the
``embeddings`` suite's ``cda_minilm`` protocol against the untouched encoder, and the untouched encoder itself under
another name (a null method: no claim may read holds), then one file that puts each claim's verdict through the
bench next to the script's verdict for the same claim.

    .venv/bin/python benchmarks/embedding_bench.py            # both invocations (the baseline trained once, cached)
    .venv/bin/python benchmarks/embedding_bench.py --render   # rewrite the results file from the bench outputs

Writes ``benchmarks/results/embedding_bench.md``; the runs and each invocation's ``results.md`` / ``results.csv`` /
``tradeoff.png`` / ``bench.json`` stay under ``--work`` (default ``$FAIRCL_CACHE/bench-runs/embeddings``). Needs the
corpora and the bias sets under ``$FAIRCL_DATA`` (default ``../shared/data``) and the offline all-MiniLM-L6-v2.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _bench_grid import (bench_command, bench_rows, bench_wall, fmt, grid_parser, listed, run_all,  # noqa: E402
                         script_rows, shown, slug, use_shared_data)

OUT = ROOT / "benchmarks" / "results" / "embedding_bench.md"
BEFORE = ROOT / "benchmarks" / "results" / "embedding_fairness.md"
#: label: (method class, its arguments)
METHODS: dict[str, tuple[str, dict]] = {
    "CCD β=1": ("CCD", {"beta": 1.0}),
    "untouched (null)": ("faircl.methods.ccd.OriginalEncoder", {}),
}
#: a score of the bench → the start of the same claim in the script's file
SCRIPT_CLAIM = {"cced_heldout": "CCD lowers CCED on held-out sources", "cced_in": "CCD lowers CCED in distribution",
                "seat": "CCD lowers the mean SEAT", "bias_ir": "CCD lowers the Bias-IR",
                "crows": "CCD moves the CrowS-Pairs", "stereoset": "CCD moves the StereoSet"}

DIFFERENCES = """\
What differs between the two columns (so the numbers are not expected to agree row by row):

- **Tuples.** The script drew the training, validation and test tuples anew for every seed and paired the seeds'
  mean CCED (a t-test over 3 seeds); the protocol draws them once (`SourcedTuples`, data seed 0, the script's draw
  of seed 0) and every seed varies the training order and the run's randomness only, so CCED's change bootstraps
  the test tuples within their source, nested in the seeds (`faircl.eval.embedding_claims.evidence`,
  `tuples_shared`).
- **Training loop.** The script trained CCD in its own process with a datamodule built inline; the bench runs
  `faircl fit` / `faircl test --ckpt_path best` of a generated config (`SourcedTuples`, the best validation loss
  kept by a `ModelCheckpoint`), forked from one worker, then scores the tested model's `embed` (`items.json`). The
  bias sets, their subsets and the item-level nulls are the same code (`faircl.eval.embedding_items`,
  `faircl.eval.embedding_claims`, now in the package).
- **The baseline.** The script scored the original encoder once and paired it with every seed; the bench runs it
  (`OriginalEncoder`: fitted without an optimiser step) on every seed, so its scores repeat exactly.
- **Not in the bench.** The β ablation, the bandwidth rule's comparison and the utility row as a claim of its own
  (the bench shows the utility change beside every claim) stay in `embedding_fairness.md`.
- **Holm.** Each bench invocation is its own family (6 claims); the script's family held its 6 claims too.
"""


def before_rows() -> list[dict[str, str]]:
    return script_rows(BEFORE)


def render(work: Path, out: Path, note: str = "") -> None:
    before = before_rows()
    lines = ["# The embedding benchmark through `faircl bench`", "",
             f"Regenerate: `.venv/bin/python benchmarks/embedding_bench.py` (runs under `{shown(work)}`; data in "
             "`$FAIRCL_DATA`). Protocol `embeddings/cda_minilm` (`faircl/bench/protocols/embeddings/`): CDA tuples "
             "of Bias-in-Bios, GAP and BUG (800 train, 48 validation, 120 test) and 60 test tuples of each held-out "
             "source (RedditBias, BEC-Pro, WinoBias, WinoGender); all-MiniLM-L6-v2 fine-tuned one epoch (Adam 5e-5, "
             "batch 16, validation every 10 steps, best validation loss kept); 3 seeds; baseline: the untouched "
             "encoder. Before: `benchmarks/results/embedding_fairness.md`. Values ×100 (CCED and SEAT |d| are not "
             "percentages); Δ = method − baseline paired by seed; [95% CI].", ""]
    lines += ["| claim | before: Δ (script) | before: verdict | after: Δ (bench) | after: verdict | "
              "baseline → method | Δ utility | bench wall time |", "|---|---|---|---|---|---|---|---|"]
    total = 0.0
    for label in METHODS:
        folder = work / slug(label)
        got = bench_rows(folder)
        if not got:
            continue
        wall = bench_wall(folder)
        total += wall
        for r in got:
            match = [o for o in before if o["claim"].startswith(SCRIPT_CLAIM.get(r["gap"], "?"))]
            same = label.startswith("CCD") and match
            b_eff, b_ver = (match[0]["effect"], match[0]["verdict"]) if same else ("—", "—")
            values = f"{100 * float(r['baseline_gap']):.1f} → {100 * float(r['method_gap']):.1f}"
            du = f"{100 * float(r['utility_change']):+.1f} [{100 * float(r['utility_lo']):+.1f}, " \
                 f"{100 * float(r['utility_hi']):+.1f}]"
            lines.append(f"| {label} lowers {r['gap']} vs {r['baseline']} | {b_eff} | {b_ver} | {fmt(r)} | "
                         f"**{r['verdict']}** | {values} | {du} | {wall / 60:.1f} min |")
    lines += ["", f"Wall time of the bench invocations' own runs: {total / 60:.1f} min in all (each invocation's "
              "`bench.json`: a run it reused from the baseline cache counts 0 there)." + (f" {note}" if note else ""),
              "", "The reason behind each verdict, the baseline's bias against its null and the utility interval are "
              "in each invocation's `results.md`; the rows below repeat the reasons.", ""]
    for label in METHODS:
        for r in bench_rows(work / slug(label)):
            lines.append(f"- {label} · {r['gap']}: {r['verdict']}: {r['reason']}")
    out.write_text("\n".join(lines + ["", DIFFERENCES]))


def main() -> None:
    p = grid_parser(__doc__, "embeddings")
    p.add_argument("--out", default=str(OUT))
    opts = p.parse_args()
    use_shared_data(ROOT)
    work = Path(opts.work)
    names = listed(opts.methods)
    if not opts.render:
        run_all({label: bench_command("embeddings", ["cda_minilm"], label, cls, args, work / slug(label), opts.quick,
                                      opts.seeds)
                 for label, (cls, args) in METHODS.items()
                 if not names or any(label.startswith(n) for n in names)})
    render(work, Path(opts.out), opts.note)
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
