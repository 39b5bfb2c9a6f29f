"""The text benchmark's main protocol (``text_fairness.py``, parts a and b) as ``faircl bench`` invocations: every
method of that script's grid, one ``faircl bench text --protocol synthbios_minilm --protocol
synthbios_minilm_permuted`` each, then one file that puts each claim's verdict through the bench next to the
script's verdict for the same method (its first family: each paper's own selection).

    .venv/bin/python benchmarks/text_bench.py                  # every method (baselines trained once, then cached)
    .venv/bin/python benchmarks/text_bench.py --methods Con_*  # a subset (prefix match, as in text_fairness.py)
    .venv/bin/python benchmarks/text_bench.py --render          # rewrite the results file from the bench outputs

Writes ``benchmarks/results/text_bench.md``; the runs and each invocation's ``results.md`` / ``results.csv`` /
``tradeoff.png`` / ``bench.json`` stay under ``--work`` (default ``~/.cache/faircl/bench-runs/text``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _bench_grid import (bench_command, bench_rows, bench_wall, default_work, fmt, run_all,  # noqa: E402
                         script_rows, shown, slug)

OUT = ROOT / "benchmarks" / "results" / "text_bench.md"
BEFORE = ROOT / "benchmarks" / "results" / "text_fairness.md"
PROTOCOLS = ("synthbios_minilm", "synthbios_minilm_permuted")
EPOCHS = 15
FIRST = round(EPOCHS * 0.6)  # two-step methods spend 60% of the epochs in their first stage, as in the script
FAIR = {"alpha": 1.0, "beta": 0.1, "temperature": 0.01}  # fairlib's ConFair: CE + 0.1 SCL(h, y) - 0.1 SCL(h, a)

#: label: (faircl method, its arguments, the start of the same method's claims in text_fairness.md)
METHODS: dict[str, tuple[str, dict, str]] = {
    "Con_* (l2 h, Shen)": ("ConFair", {**FAIR, "normalize": True}, "Shen: Con_* (l2 h, Shen)"),
    "Con_* (raw tanh h, fairlib)": ("ConFair", {**FAIR, "normalize": False},
                                    "Shen (fairlib's variant): Con_* (raw tanh h, fairlib)"),
    "Con_*^ft": ("ConFair", {"temperature": 0.01, "pipeline": True, "stage1_epochs": FIRST}, "Shen: Con_*^ft"),
    "TwoStageCL": ("TwoStageCL", {"lambda_cs": 1.0, "temperature": 0.1, "stage1_epochs": FIRST},
                   "Chi: TwoStageCL"),
    "OneStageCL": ("OneStageCL", {"lambda_cs": 1.0, "gamma": 0.3, "temperature": 0.1}, "Chi: OneStageCL"),
    "Adv": ("Adversarial", {"lambda_adv": 1.0, "conditional": True}, "Shen (baseline): Adv"),
    "DiverseAdv": ("DiverseAdversarial", {"lambda_adv": 1.0, "conditional": True, "n_adv": 3, "lambda_diff": 100.0},
                   "Chi (baseline): DiverseAdv"),
    "INLP": ("INLP", {"stage1_epochs": FIRST, "n_clf": 20, "probe": "logistic", "per_class": True},
             "Shen (baseline): INLP"),
}

DIFFERENCES = """\
What differs between the two columns (so the numbers are not expected to agree row by row):

- **Training loop.** The script trains each method in its own process on its own feature tensors; the bench runs
  `faircl fit` / `faircl test` on `SynthBiosText` (the same 1,200 / 400 / 800 bios, `seed: 0`, encoded by the
  packaged all-MiniLM-L6-v2 through faircl's feature cache), so data order and initialisation differ: no run is the
  same, and no per-row prediction is expected to match.
- **Batch.** The script ran ConFair (all three rows) at fairlib's batch of 1,024 for the same number of optimiser
  steps, against a CE at that batch; the bench runs every method and CE at the protocol's batch of 256, 15 epochs.
- **Selection.** The script judged Chi's claims at Chi's rule (best validation F1) and on the equalized-odds gap; the
  protocol judges every claim at Shen's rule (lowest validation TPR GAP within 1 point of the best validation
  accuracy) and on the TPR GAP (`tpr_gap_rms`).
- **Views.** TwoStageCL / OneStageCL draw their second view from 4 cached EDA copies made by the text pipeline's
  seeded augmenter; the script redrew copies until all 5 were distinct.
- **Holm.** Each bench invocation is its own family (its method's claims on the two protocols); the script ran one
  family over every claim of its file.
"""


def before_rows() -> dict[str, list[dict[str, str]]]:
    """text_fairness.md's first family, part (a) rows: claim-label prefix → [{claim, effect, verdict}]."""
    rows: dict[str, list[dict[str, str]]] = {}
    for row in script_rows(BEFORE):
        if not row["protocol"].startswith("SynthBios two-class, MiniLM"):
            continue
        for _, _, prefix in METHODS.values():
            if row["claim"].startswith(prefix + " lowers"):
                rows.setdefault(prefix, []).append(row)
    return rows


def render(work: Path, out: Path, walls: dict[str, float], note: str = "") -> None:
    before = before_rows()
    lines = ["# The text benchmark's main protocol through `faircl bench`", "",
             f"Regenerate: `.venv/bin/python benchmarks/text_bench.py` (runs under `{shown(work)}`). Protocols "
             f"`text/{PROTOCOLS[0]}` and its attribute-permuted control `text/{PROTOCOLS[1]}` "
             "(`faircl/bench/protocols/text/`): SynthBios two-class on frozen all-MiniLM-L6-v2 features, 2 × 300 tanh "
             "MLP, batch 256, 15 epochs, Shen's selection rule, 8 seeds, CE baseline (trained once, cached, shared "
             "by every method). Before: `benchmarks/results/text_fairness.md` (its first family, part a). Values "
             "×100; Δ = method − CE paired by seed; [95% CI].", ""]
    lines += ["| claim | before: Δ (script) | before: verdict | after: Δ (bench) | after: verdict | "
              "control (after) | bench wall time |", "|---|---|---|---|---|---|---|"]
    for label, (_, _, prefix) in METHODS.items():
        folder = work / slug(label)
        got = bench_rows(folder)
        if not got:
            continue
        wall = bench_wall(folder, walls.get(label, 0.0))
        main = [r for r in got if r["protocol"] == PROTOCOLS[0]]
        ctrl = {r["gap"]: r["verdict"] for r in got if r["protocol"] == PROTOCOLS[1]}
        old = before.get(prefix, [])
        for r in main:
            leak = r["gap"].startswith("leakage")
            match = [o for o in old if ("Leak@h" in o["claim"]) == leak]
            b_eff, b_ver = (match[0]["effect"], match[0]["verdict"]) if match else ("—", "not in the script")
            lines.append(f"| {label} lowers {r['gap']} vs CE | {b_eff} | {b_ver} | {fmt(r)} | **{r['verdict']}** "
                         f"| {ctrl.get(r['gap'], '—')} | {wall / 60:.1f} min |")
    total = sum(bench_wall(work / slug(lb)) for lb in METHODS)
    lines += ["", f"Wall time of the bench invocations: {total / 60:.1f} min in all (the first one also trained and "
              "cached the 16 CE runs that every later one reused)." + (f" {note}" if note else ""), "", DIFFERENCES]
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="", help="comma-separated labels or prefixes ('' = all)")
    p.add_argument("--work", default=str(default_work("text")))
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--quick", action="store_true", help="the protocols' quick variants (3 seeds, 4 epochs)")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--render", action="store_true", help="only rewrite the results file from --work")
    p.add_argument("--note", default="", help="a sentence added after the wall time (e.g. the machine's load)")
    opts = p.parse_args()
    work = Path(opts.work)
    names = [m.strip() for m in opts.methods.split(",") if m.strip()]
    chosen = {k: v for k, v in METHODS.items() if not names or any(k == n or k.startswith(n) for n in names)}
    walls: dict[str, float] = {}
    if not opts.render:
        walls = run_all({label: bench_command("text", list(PROTOCOLS), label, cls, args, work / slug(label),
                                              opts.quick, opts.seeds)
                         for label, (cls, args, _) in chosen.items()})
    render(work, Path(opts.out), walls, opts.note)
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
