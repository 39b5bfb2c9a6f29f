"""The text benchmark as ``faircl bench`` invocations: every method of the grid (``faircl/bench/grids/text.yaml``)
on the ``text`` suite's protocols, one invocation per method and part, then one results file of every claim's
verdict.

Parts: ``shen`` (SynthBios two-class on frozen MiniLM, batch 256, Shen's rule, with the attribute-permuted control),
``b1024`` (the same at fairlib's batch of 1,024 for ConFair, CE alike), ``chi`` (Chi's rule, equalized-odds gap),
``grid`` (Chi's λ / τ grid of TwoStageCL against λ = 0), ``hate`` (English hate speech, attribute age, on a frozen
CE-trained bi-GRU Embed, batch 1,024), ``bios`` / ``bios_full`` / ``bios_chi`` (the real Bias in Bios samples, Shen's
rule at batch 64 / the whole split per step / Chi's rule). Each part but ``shen`` has a ``…_dto`` twin (and
``shen_dto`` for the methods the grid names in ``dto_from_shen``): the same claims at fairlib's DTO selection, on
the ``_dto`` protocols (run on request only). A partial run keeps the other invocations' rows of the results file
as they stand.

    .venv/bin/python benchmarks/reproduction/text_bench.py                   # every invocation (baselines cached)
    .venv/bin/python benchmarks/reproduction/text_bench.py --methods Con_*   # a subset of methods (prefix match)
    .venv/bin/python benchmarks/reproduction/text_bench.py --parts chi,grid  # a subset of parts
    .venv/bin/python benchmarks/reproduction/text_bench.py --parts b1024_dto,chi_dto,grid_dto,hate_dto,shen_dto,bios_dto,bios_full_dto,bios_chi_dto
    .venv/bin/python benchmarks/reproduction/text_bench.py --render           # the results file from the outputs

Writes ``benchmarks/reproduction/results/text_bench.md``; the runs and each invocation's ``results.md`` /
``results.csv`` / ``tradeoff.png`` / ``bench.json`` stay under ``--work`` (default ``$FAIRCL_CACHE/bench-runs/text``).
The Bias in Bios parts need ``$FAIRCL_DATA/bias_in_bios_samples`` and the hate-speech part
``$FAIRCL_DATA/multilingual_hate_speech_demographics`` (default ``../shared/data``).
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

OUT = HERE / "results" / "text_bench.md"
GRID = load_grid("text", ("parts", "methods"))
#: part: its protocols; every part's `_dto` twin runs its protocols' `_dto` versions (no permuted control)
PARTS: dict[str, tuple[str, ...]] = {name: tuple(p["protocols"]) for name, p in GRID["parts"].items()}
PARTS.update({f"{part}_dto": tuple(f"{p}_dto" for p in protocols if not p.endswith("_permuted"))
              for part, protocols in list(PARTS.items())})
#: the suite's protocols by name (their stage-1 rule sets a two-stage method's budget)
PROTOCOLS = {p.name: p for p in load_suite("text")}
#: label: the grid's entry of the method (class, init_args, parts, stage1_from_share)
METHODS: dict[str, dict] = GRID["methods"]


def method_parts(label: str) -> list[str]:
    """The parts a method runs: its first-family parts, then their DTO twins."""
    first = list(METHODS[label]["parts"])
    return first + [f"{p}_dto" for p in first if p != "shen" or label in GRID.get("dto_from_shen", [])]


def invocations(names: list[str], parts: list[str]) -> dict[str, tuple[str, str, list[str], dict, str]]:
    """Invocation name → (label, class, protocols, arguments, part) of every chosen method and part; a method's
    part ``shen`` keeps the method's label as its name (its runs' folder)."""
    out = {}
    for label, method in METHODS.items():
        if names and not any(label == n or label.startswith(n) for n in names):
            continue
        for part in method_parts(label):
            if parts and part not in parts:
                continue
            protocols = list(PARTS[part])
            args = stage1_epochs(method, [PROTOCOLS[p] for p in protocols])
            out[label if part == "shen" else f"{label} · {part}"] = (label, method["class"], protocols, args, part)
    return out


def render(work: Path, out: Path, walls: dict[str, float], note: str = "") -> None:
    lines = ["# The text benchmark through `faircl bench`", "",
             "Regenerate: `.venv/bin/python benchmarks/reproduction/text_bench.py` "
             f"(runs under `{shown(work)}`; data in "
             "`$FAIRCL_DATA`). Protocols of `faircl/bench/protocols/text/`: `synthbios_minilm` (SynthBios two-class on "
             "frozen all-MiniLM-L6-v2 features, 2 × 300 tanh MLP, batch 256, 15 epochs, Shen's rule, 8 seeds) with "
             "its attribute-permuted control, `…_b1024` (batch 1,024, 60 epochs), `…_chi` (Chi's rule, "
             "equalized-odds gap), `…_chi_lambda0` (TwoStageCL's λ / τ grid against λ = 0), `hate_speech_embed` "
             "(English hate speech, age, controlled stereotype: a 2 × 300 tanh MLP on a frozen CE-trained bi-GRU "
             "Embed, batch 1,024, 24 epochs, Shen's rule, 5 seeds) and `bios_samples` "
             "(the real Bias in Bios samples, batch 64, 30 epochs, 10 seeds) with `…_fullbatch` and `…_chi`, and "
             "each one's `…_dto` twin (fairlib's DTO selection, run on request); every baseline trained once, "
             "cached and shared. Methods and arguments: `faircl/bench/grids/text.yaml`. Values ×100; Δ = method − "
             "baseline paired by seed; [95% CI].", ""]
    lines += ["| claim | protocol | Δ [95% CI] | verdict | seeds | control | bench wall time |",
              "|---|---|---|---|---|---|---|"]
    total, carried, ran, cpu, reopened = 0.0, [], [], 0.0, []
    previous = out.read_text().splitlines() if out.is_file() else []
    for key, (label, _, protocols, _, part) in invocations([], []).items():
        folder = work / slug(key)
        got = bench_rows(folder)
        if not got:  # not run here: keep its rows of the file as it stands (a partial regeneration keeps the rest)
            kept = [carried_row(ln, 4, 7) for ln in previous[:open_start(previous)]
                    if ln.startswith(f"| {label} lowers ") and ln.split(" | ")[1] in protocols]
            lines += kept
            if kept:
                carried.append(key)
                reopened.append((label, list(protocols)))
                total += 60 * float(kept[0].rstrip(" |").rsplit("|", 1)[1].split()[0])
            continue
        wall = bench_wall(folder, walls.get(key, 0.0))
        total += wall
        cpu += bench_cpu(folder)
        ran.append(key)
        ctrl = {r["gap"]: r["verdict"] for r in got if r["protocol"].endswith("_permuted")}
        for r in got:
            if r["protocol"].endswith("_permuted"):
                continue
            lines.append(f"| {label} lowers {r['gap']} vs {r.get('baseline') or 'CE'} | {r['protocol']} | {fmt(r)} | "
                         f"**{r['verdict']}** | {seeds_cell(r)} | {ctrl.get(r['gap'], '—')} | {wall / 60:.1f} min |")
    lines += ["", f"Wall time of the bench invocations' own runs: {total / 60:.1f} min in all (each invocation's "
              "`bench.json`: a run it reused, from the baseline cache or from an earlier invocation of the same "
              "command, counts 0 there; the first invocation on a protocol trained and cached its baselines)."
              + (f" CPU time of the runs of the invocations run this time: {cpu / 3600:.2f} h (reused runs included)."
                 if cpu else "")
              + (f" {note}" if note else "")
              + _carried_note(carried, ran)]
    lines += open_claims({key: work / slug(key) for key in ran}, carried_open(previous, reopened))
    out.write_text("\n".join(lines) + "\n")


def _carried_note(carried: list[str], ran: list[str]) -> str:
    """Which rows come from the previous regeneration (named by the shorter list)."""
    if not carried:
        return ""
    if not ran:
        return " Every row is from the previous regeneration (nothing was run again this time)."
    if len(ran) < len(carried):
        parts = sorted({k.rsplit(" · ", 1)[1] if " · " in k else "shen" for k in ran})
        named = ", ".join(ran) if len(ran) <= 4 else f"the {len(ran)} invocations of part(s) {', '.join(parts)}"
        return (f" Every row but those of {named or 'no invocation'} is from the previous regeneration "
                "(not run again this time).")
    return f" Rows of {', '.join(carried)} are those of the previous regeneration (not run again this time)."


def main() -> None:
    p = grid_parser(__doc__, "text")
    p.add_argument("--parts", default="", help=f"comma-separated parts ('' = all): {', '.join(PARTS)}")
    p.add_argument("--out", default=str(OUT))
    opts = p.parse_args()
    use_shared_data(ROOT)
    work = Path(opts.work)
    names, parts = listed(opts.methods), listed(opts.parts, PARTS, "--parts")
    walls: dict[str, float] = {}
    if not opts.render:
        walls = run_all({key: bench_command("text", protocols, label, cls, args, work / slug(key), opts.quick,
                                            opts.seeds, opts.max_seeds)
                         for key, (label, cls, protocols, args, _) in invocations(names, parts).items()})
    render(work, Path(opts.out), walls, opts.note)
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
