"""The vision benchmark (what the removed ``vision_fairness.py`` ran) as ``faircl bench`` invocations: every method of
that script's grid on the ``vision`` suite's stereotype protocols, one invocation per method and data set, then one
file that puts each claim's verdict through the bench next to the script's verdict for the same claim (its first
family: each paper's own selection).

    .venv/bin/python benchmarks/vision_bench.py                  # every method (baselines trained once, then cached)
    .venv/bin/python benchmarks/vision_bench.py --methods PARADE  # a subset (prefix match)
    .venv/bin/python benchmarks/vision_bench.py --datasets digits  # one data set
    .venv/bin/python benchmarks/vision_bench.py --render          # rewrite the results file from the bench outputs

Writes ``benchmarks/results/vision_bench.md``; the runs and each invocation's ``results.md`` / ``results.csv`` /
``tradeoff.png`` / ``bench.json`` stay under ``--work`` (default ``$FAIRCL_CACHE/bench-runs/vision``). UTKFace needs
``$FAIRCL_DATA/utkface_subset`` (default ``../shared/data``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _bench_grid import (bench_command, bench_rows, bench_wall, fmt, grid_parser, listed, run_all,  # noqa: E402
                         script_rows, shown, slug, use_shared_data)

OUT = ROOT / "benchmarks" / "results" / "vision_bench.md"
BEFORE = ROOT / "benchmarks" / "results" / "vision_fairness.md"
DATASETS = {"digits": "stereo_digits", "utkface": "stereo_utkface"}
#: epochs of Chi's family per data set (the protocols' budgets): TwoStageCL spends 60% of them on the encoder
CHI_EPOCHS = {"digits": 20, "utkface": 30}
SHEN = {"alpha": 1.0, "beta": 0.1, "temperature": 0.01}  # fairlib's ConFair: CE + 0.1 SCL(h, y) - 0.1 SCL(h, a)

#: label: (faircl method, its arguments, protocol suffixes, the start of the same method's claims in the script)
METHODS: dict[str, tuple[str, dict, tuple[str, ...], str]] = {
    "Con_* (l2 h, Shen)": ("ConFair", {**SHEN, "normalize": True}, ("", "_permuted"), "Shen: Con_* (l2 h, Shen)"),
    "Con_* (raw h, fairlib)": ("ConFair", {**SHEN, "normalize": False}, ("", "_permuted"),
                               "Shen (fairlib's variant): Con_* (raw h, fairlib)"),
    "TwoStageCL": ("TwoStageCL", {"lambda_cs": 1.0, "temperature": 0.1}, ("_chi", "_chi_lambda0"),
                   "Chi: TwoStageCL"),
    "OneStageCL": ("OneStageCL", {"lambda_cs": 1.0, "gamma": 0.3, "temperature": 0.1}, ("_chi",),
                   "Chi: OneStageCL"),
    "PARADE": ("PARADE", {"lambda_sa": 0.1, "lambda_sep": 500.0}, ("_knn",), "finDML: PARADE"),
    "FairSampling (weighted)": ("FairSamplingSimCLR", {"negatives": "weighted", "stage1_epochs": 10}, ("_probe",),
                                "Martin: FairSampling (weighted)"),
    "FairSampling (sampled)": ("FairSamplingSimCLR", {"negatives": "sampled", "stage1_epochs": 10}, ("_probe",),
                               "Martin: FairSampling (sampled)"),
}

DIFFERENCES = """\
What differs between the two columns (so the numbers are not expected to agree row by row):

- **Training loop.** The script trains every run in one process on datamodules it builds once (its own callbacks keep
  each epoch's weights in memory); the bench runs `faircl fit` / `faircl test` of a generated config on the same
  rows (`StereoDigits` / `StereoUTKFace`, data seed 0, now in `faircl.data`), forked from one worker. Initialisation
  and data order differ, so no run is the same and no per-row prediction is expected to match.
- **Views.** The script gave every method of Chi's family two views (its CE too); the bench gives views only to the
  methods that train on them, so CE draws its batches from un-augmented rows.
- **Embedding predictions.** The same rules (the label of the nearest training `z`, cosine; a logistic regression on
  the standardised training `h`), now computed by `faircl test` (`row_predictions: knn | probe`) and kept in
  `rows.npz`.
- **Cluster dominance.** A statistic of the representation with no attribute and no per-row predictions, so
  neither the bias null nor the row bootstrap applies: the `_probe` protocols (version 2) claim it as a `statistic`,
  decided as the script did, by a t-test over seeds of the test reports' `cluster_dominance` (K-means, K = 4, on the
  test embeddings), in the same Holm family as the invocation's other claims. The λ = 0 control of TwoStageCL is the
  protocols `stereo_{digits,utkface}_chi_lambda0` (TwoStageCL only).
- **Controls.** The bench also runs each Con_* row on `stereo_digits_permuted` (the colour permuted in every split);
  every claim there must read untestable.
- **Holm.** Each bench invocation is its own family (its method's claims on one data set's protocols); the script ran
  one family over every claim of its file.
"""


def before_rows() -> list[dict[str, str]]:
    """vision_fairness.md's first-family rows, each with its data set (``digits`` / ``utkface``)."""
    out = []
    for row in script_rows(BEFORE):
        ds = "digits" if row["claim"].endswith("(digits)") else "utkface" if row["claim"].endswith("(utkface)") else ""
        if ds:
            out.append({**row, "dataset": ds})
    return out


def invocations(names: list[str], datasets: list[str]) -> dict[str, tuple[str, str, list[str], dict]]:
    """``<label> · <data set>`` → (label, class, protocols, arguments) of every chosen invocation."""
    out = {}
    for label, (cls, args, suffixes, _) in METHODS.items():
        if names and not any(label == n or label.startswith(n) for n in names):
            continue
        for ds in datasets:
            extra = {"stage1_epochs": round(0.6 * CHI_EPOCHS[ds])} if cls == "TwoStageCL" else {}
            suffixes_here = [s for s in suffixes if ds == "digits" or s != "_permuted"]
            out[f"{label} · {ds}"] = (label, cls, [DATASETS[ds] + s for s in suffixes_here], {**args, **extra})
    return out


def _claim_kind(claim: str) -> str:
    """What a claim of the script's file is about: ``leakage``, ``cluster`` (dominance) or ``gap``."""
    return "leakage" if "Leak@h" in claim else "cluster" if "cluster dominance" in claim else "gap"


def _row_kind(gap: str) -> str:
    """The same for a bench row's measure (``leakage_h``, ``cluster_dominance``, a gap)."""
    return "leakage" if gap.startswith("leakage") else "cluster" if gap.startswith("cluster") else "gap"


def render(work: Path, out: Path, note: str = "") -> None:
    before = before_rows()
    lines = ["# The vision benchmark through `faircl bench`", "",
             f"Regenerate: `.venv/bin/python benchmarks/vision_bench.py` (runs under `{shown(work)}`; data in "
             "`$FAIRCL_DATA`). Protocols `vision/stereo_{digits,utkface}` (Shen's family: full batch, 100 epochs, "
             "Shen's rule, CE), `…_chi` (batch 128, Chi's rule: best validation F1, equalized-odds gap, CE), "
             "`…_knn` "
             "(finDML: DML baseline, 1-NN predictions, last epoch), `…_probe` (Martin & Ogbuokiri: SimCLR baseline, "
             "linear-probe predictions, last epoch) and the control `stereo_digits_permuted`, in "
             "`faircl/bench/protocols/vision/`; 8 seeds; every baseline trained once, cached and shared. Before: "
             "`benchmarks/results/vision_fairness.md` (its first family). Values ×100; Δ = method − baseline "
             "paired by seed; [95% CI].", ""]
    lines += ["| claim | before: Δ (script) | before: verdict | after: Δ (bench) | after: verdict | "
              "control (after) | bench wall time |", "|---|---|---|---|---|---|---|"]
    total, used, carried = 0.0, set(), []
    previous = out.read_text().splitlines() if out.is_file() else []
    for key, (label, _, protocols, _) in invocations([], list(DATASETS)).items():
        ds = key.rsplit(" · ", 1)[1]
        folder = work / slug(key)
        got = bench_rows(folder)
        if not got:  # not run here: keep its rows of the file as it stands (a partial regeneration keeps the rest)
            kept = [line for line in previous if line.startswith(f"| {label} lowers ") and f" ({ds}) |" in line]
            lines += kept
            if kept:
                carried.append(key)
                total += 60 * float(kept[0].rstrip(" |").rsplit("|", 1)[1].split()[0])
                kinds = {_row_kind(line.split(" lowers ", 1)[1].split(" vs ")[0]) for line in kept}
                used.update(o["claim"] for o in before if o["dataset"] == ds and o["claim"].startswith(
                    METHODS[label][3] + " lowers") and _claim_kind(o["claim"]) in kinds and "λ = 0" not in o["claim"])
            continue
        wall = bench_wall(folder)
        total += wall
        prefix = METHODS[label][3]
        ctrl = {r["gap"]: r["verdict"] for r in got if r["protocol"].endswith("_permuted")}
        for r in got:
            if r["protocol"].endswith("_permuted"):
                continue
            kind = _row_kind(r["gap"])
            if r["protocol"].endswith("_lambda0"):  # the script's λ = 0 control of the same method's fair term
                match = [o for o in before if o["dataset"] == ds and "λ = 0" in o["claim"]
                         and f"{label} lowers" in o["claim"]]
            else:
                match = [o for o in before if o["dataset"] == ds and o["claim"].startswith(prefix + " lowers")
                         and _claim_kind(o["claim"]) == kind and "λ = 0" not in o["claim"]]
            if match:
                used.add(match[0]["claim"])
            b_eff, b_ver = (match[0]["effect"], match[0]["verdict"]) if match else ("—", "not in the script")
            lines.append(f"| {label} lowers {r['gap']} vs {r['baseline']} ({ds}) | {b_eff} | {b_ver} | {fmt(r)} "
                         f"| **{r['verdict']}** | {ctrl.get(r['gap'], '—')} | {wall / 60:.1f} min |")
    rest = [o for o in before if o["claim"] not in used]
    lines += ["", f"Wall time of the bench invocations' own runs: {total / 60:.1f} min in all (each invocation's "
              "`bench.json`: a run it reused, from the baseline cache or from an earlier invocation of the same "
              "command, counts 0 there; the first invocation on a protocol trained and cached its baselines)."
              + (f" {note}" if note else "")
              + (f" Rows of {', '.join(carried)} are those of the previous regeneration (not run again this time)."
                 if carried else ""), ""]
    if rest:
        lines += ["Claims of `vision_fairness.md` that the bench does not judge (see below why):", ""]
        lines += [f"- {o['claim']}: {o['effect']}, {o['verdict']}" for o in rest]
        lines.append("")
    out.write_text("\n".join(lines + [DIFFERENCES]))


def main() -> None:
    p = grid_parser(__doc__, "vision")
    p.add_argument("--datasets", default="digits,utkface", help="comma-separated: digits, utkface")
    p.add_argument("--out", default=str(OUT))
    opts = p.parse_args()
    use_shared_data(ROOT)
    work = Path(opts.work)
    names, datasets = listed(opts.methods), listed(opts.datasets, DATASETS, "--datasets")
    if not opts.render:
        run_all({key: bench_command("vision", protocols, label, cls, args, work / slug(key), opts.quick, opts.seeds)
                 for key, (label, cls, protocols, args) in invocations(names, datasets).items()})
    render(work, Path(opts.out), opts.note)
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
