"""The vision benchmark as ``faircl bench`` invocations: every method of the grid (``faircl/bench/grids/vision.yaml``)
on the ``vision`` suite's stereotype protocols, one invocation per method and data set, then one results file of
every claim's verdict.

    .venv/bin/python benchmarks/reproduction/vision_bench.py                  # every method (baselines cached)
    .venv/bin/python benchmarks/reproduction/vision_bench.py --methods PARADE  # a subset (prefix match)
    .venv/bin/python benchmarks/reproduction/vision_bench.py --datasets digits  # one data set
    .venv/bin/python benchmarks/reproduction/vision_bench.py --render          # the results file from the outputs

Writes ``benchmarks/reproduction/results/vision_bench.md``; the runs and each invocation's ``results.md`` /
``results.csv`` / ``tradeoff.png`` / ``bench.json`` stay under ``--work`` (default
``$FAIRCL_CACHE/bench-runs/vision``). UTKFace needs ``$FAIRCL_DATA/utkface_subset`` (default ``../shared/data``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from _bench_grid import (bench_command, bench_cpu, bench_rows, bench_wall, carried as carried_row, carried_open, fmt, open_start,  # noqa: E402
                         grid_parser, listed, load_grid, open_claims, run_all, seeds_cell, shown, slug, stage1_epochs,
                         use_shared_data)

from faircl.bench.spec import load_suite  # noqa: E402

OUT = HERE / "results" / "vision_bench.md"
GRID = load_grid("vision", ("datasets", "methods"))
#: data set: its grid entry (protocol, permuted_control)
DATASETS: dict[str, dict] = GRID["datasets"]
#: label: the grid's entry of the method (class, init_args, protocols: suffixes, stage1_from_share)
METHODS: dict[str, dict] = GRID["methods"]
#: the suite's protocols by name (their stage-1 rule sets a two-stage method's budget)
PROTOCOLS = {p.name: p for p in load_suite("vision")}


def invocations(names: list[str], datasets: list[str]) -> dict[str, tuple[str, str, list[str], dict]]:
    """``<label> · <data set>`` → (label, class, protocols, arguments) of every chosen invocation."""
    out = {}
    for label, method in METHODS.items():
        if names and not any(label == n or label.startswith(n) for n in names):
            continue
        for ds in datasets:
            data = DATASETS[ds]
            suffixes = [s for s in method["protocols"] if data.get("permuted_control") or s != "_permuted"]
            protocols = [data["protocol"] + s for s in suffixes]
            out[f"{label} · {ds}"] = (label, method["class"], protocols,
                                      stage1_epochs(method, [PROTOCOLS[p] for p in protocols]))
    return out


def render(work: Path, out: Path, note: str = "") -> None:
    lines = ["# The vision benchmark through `faircl bench`", "",
             "Regenerate: `.venv/bin/python benchmarks/reproduction/vision_bench.py` "
             f"(runs under `{shown(work)}`; data in "
             "`$FAIRCL_DATA`). Protocols `vision/stereo_{digits,utkface}` (Shen's family: full batch, 100 epochs, "
             "Shen's rule, CE), `…_chi` (batch 128, Chi's rule: best validation F1, equalized-odds gap, CE), "
             "`…_knn` "
             "(finDML: DML baseline, 1-NN predictions, last epoch), `…_probe` (Martin & Ogbuokiri: SimCLR baseline, "
             "linear-probe predictions, last epoch) and the control `stereo_digits_permuted`, in "
             "`faircl/bench/protocols/vision/`; 8 seeds; every baseline trained once, cached and shared. Methods and "
             "arguments: `faircl/bench/grids/vision.yaml`. Values ×100; Δ = method − baseline paired by seed; "
             "[95% CI].", ""]
    lines += ["| claim | Δ [95% CI] | verdict | seeds | control | bench wall time |", "|---|---|---|---|---|---|"]
    total, carried, cpu, ran, reopened = 0.0, [], 0.0, [], []
    previous = out.read_text().splitlines() if out.is_file() else []
    for key, (label, _, protocols, _) in invocations([], list(DATASETS)).items():
        ds = key.rsplit(" · ", 1)[1]
        folder = work / slug(key)
        got = bench_rows(folder)
        if not got:  # not run here: keep its rows of the file as it stands (a partial regeneration keeps the rest)
            kept = [carried_row(line, 3, 6) for line in previous[:open_start(previous)]
                    if line.startswith(f"| {label} lowers ") and f" ({ds}) |" in line]
            lines += kept
            if kept:
                carried.append(key)
                reopened.append((label, list(protocols)))
                total += 60 * float(kept[0].rstrip(" |").rsplit("|", 1)[1].split()[0])
            continue
        wall = bench_wall(folder)
        total += wall
        cpu += bench_cpu(folder)
        ran.append(key)
        ctrl = {r["gap"]: r["verdict"] for r in got if r["protocol"].endswith("_permuted")}
        for r in got:
            if r["protocol"].endswith("_permuted"):
                continue
            lines.append(f"| {label} lowers {r['gap']} vs {r['baseline']} ({ds}) | {fmt(r)} | **{r['verdict']}** "
                         f"| {seeds_cell(r)} | {ctrl.get(r['gap'], '—')} | {wall / 60:.1f} min |")
    lines += ["", f"Wall time of the bench invocations' own runs: {total / 60:.1f} min in all (each invocation's "
              "`bench.json`: a run it reused, from the baseline cache or from an earlier invocation of the same "
              "command, counts 0 there; the first invocation on a protocol trained and cached its baselines)."
              + (f" CPU time of the runs of the invocations run this time: {cpu / 3600:.2f} h (reused runs included)."
                 if cpu else "")
              + (f" {note}" if note else "")
              + (f" Rows of {', '.join(carried)} are those of the previous regeneration (not run again this time)."
                 if carried else "")]
    lines += open_claims({key: work / slug(key) for key in ran}, carried_open(previous, reopened))
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    p = grid_parser(__doc__, "vision")
    p.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated: {', '.join(DATASETS)}")
    p.add_argument("--out", default=str(OUT))
    opts = p.parse_args()
    use_shared_data(ROOT)
    work = Path(opts.work)
    names, datasets = listed(opts.methods), listed(opts.datasets, DATASETS, "--datasets")
    if not opts.render:
        run_all({key: bench_command("vision", protocols, label, cls, args, work / slug(key), opts.quick, opts.seeds,
                                 opts.max_seeds)
                 for key, (label, cls, protocols, args) in invocations(names, datasets).items()})
    render(work, Path(opts.out), opts.note)
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
