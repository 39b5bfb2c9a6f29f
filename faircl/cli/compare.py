"""``faircl compare RUN_OR_SWEEP_DIR... --out DIR``: one table of many runs, model selection, the Pareto front and
claims against a baseline, decided as the benchmarks decide them.

Every ``report.json`` under the given folders is a run (a ``faircl test`` run folder, or a trial of ``faircl sweep``:
only trials that finished count), read by :func:`faircl.runs.folders.read_run`. Its seed and settings are those
of the fit that made its checkpoint (the report's ``meta.fit``, copied by ``faircl test`` from the checkpoint; for
older folders the fit's ``config.yaml`` beside the checkpoint), the validation metrics of that checkpoint come from
the sweep's ``result.json`` or the fit run's ``metrics.csv``. Runs with the same configuration but for the seed form one setting, named by what differs; runs of
different data sets are refused. Written into ``--out``:

- ``runs.md`` / ``runs.csv``: every run — setting, seed, the varied configuration values, accuracy, balanced
  accuracy, every gap, leakage, DTO and balanced DTO (test), validation DTO, the checkpoint;
- ``settings.md`` / ``settings.csv``: each setting's mean ± standard deviation over seeds (a setting of one seed: its
  mean alone, sd ``n/a``), whether it is on the Pareto front, and the selections;
- ``selection.md``: the setting selected by DTO, by balanced DTO and under the ``--select`` constraints
  (``--select "accuracy>=0.80" --minimise tpr_gap_rms``), chosen on the validation numbers of the checkpoints
  (``--split test`` to choose on test) and reported with their test numbers;
- ``front.png``: test accuracy against ``--gap`` (default ``tpr_gap_rms``), seed spread as error bars, the front
  joined and the selected settings marked;
- ``baseline.md`` (``--baseline DIR`` or ``--baseline KEY=VALUE[,KEY=VALUE]``): each setting's paired-seed
  differences and the verdicts of :mod:`faircl.eval.baseline` (from the runs' ``rows.npz``: the bias null on test
  and validation, the seeds × rows bootstrap, the three axes of each word, the MDE); a claim on one paired seed
  gets no verdict and says so (no seed-to-seed variance, as ``faircl bench`` refuses ``--seeds 1``);
- ``compare.json``: all of it, machine-readable.

Nothing is dropped silently: a run of untrained weights (``faircl test --ckpt_path none``), an unfinished sweep trial,
an unreadable report or record and the files of a run without their ``report.json`` are left out and named (the
notes, ``runs.md``, ``compare.json``'s ``left_out``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Optional

import yaml

from faircl.runs.user_error import UserError
from faircl.eval.baseline import baseline_evidence
from faircl.eval.report import mark
from faircl.eval.row_predictions import data_identity
from faircl.runs.folders import read_run, run_files_without_report
from faircl.eval.tradeoff import (Run, Setting, front_mask, group_runs, metric_columns, parse_constraint, plot_front,
                                  select, setting_labels)
from faircl.eval.verdicts import VERDICT_HEADER, decide, verdict_row

#: configuration keys that never distinguish settings (paths, logging, the seed)
IGNORE = ("seed_everything", "ckpt_path", "trainer.default_root_dir", "trainer.logger", "trainer.callbacks",
          "trainer.enable_progress_bar", "trainer.enable_model_summary", "trainer.enable_checkpointing",
          "trainer.devices", "trainer.num_nodes", "trainer.strategy", "trainer.accelerator", "config")
#: the fewest paired seeds a claim is decided on (as ``faircl bench --seeds``)
MIN_SEEDS = 2


# ---------------------------------------------------------------------------------------------------- runs
def _data_sets(runs: list[Run]) -> None:
    """Refuse runs of different data sets (data class and arguments but the loader's, or other test rows)."""
    sets: dict[tuple, list[Run]] = {}
    for r in runs:
        sets.setdefault(data_identity(r.config), []).append(r)
    if len(sets) > 1:
        def name(key: tuple) -> str:
            d = dict(key)
            args = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in key if k != "data")
            return f"{str(d.get('data', 'unknown data')).strip(chr(39))}({args})"

        told = "; ".join(f"{name(k)}: {len(v)} run(s), e.g. {v[0].path}" for k, v in sets.items())
        raise UserError(f"compare: the runs come from {len(sets)} data sets ({told}); a front, a selection and "
                       "baseline claims need one data set: compare each data set's runs separately")


#: why a run folder under the given folders is not compared (the notes name each folder)
UNFINISHED = "a sweep trial that did not finish (interrupted or pruned)"
UNTRAINED = ("tested on untrained weights (`faircl test --ckpt_path none`: no checkpoint), never compared as a "
             "trained run")


def _left_out_notes(left_out: dict[str, str]) -> list[str]:
    """One note per reason, naming the folders left out for it (the first five; all of them in ``compare.json``)."""
    by_why: dict[str, list[str]] = {}
    for where, why in left_out.items():
        by_why.setdefault(why, []).append(where)
    return [f"left out {len(paths)} run folder(s), {why}: {', '.join(paths[:5])}"
            + (f" and {len(paths) - 5} more (compare.json: left_out)" if len(paths) > 5 else "")
            for why, paths in by_why.items()]


def collect(folders: list[str]) -> tuple[list[Run], list[str], dict[str, str]]:
    """Every finished run of trained weights under ``folders`` (newest report per setting and seed); returns the runs,
    notes, and the run folders left out (folder → why: an unfinished sweep trial, untrained weights, an unreadable
    report or record, files of a run without their ``report.json``)."""
    runs: list[Run] = []
    notes: list[str] = []
    left_out: dict[str, str] = {}
    seen: set[Path] = set()
    for folder in folders:
        root = Path(folder)
        if not root.exists():
            raise UserError(f"compare: no such folder {folder!r}")
        reports = [root] if root.is_file() else sorted(root.rglob("report.json"))
        found, dropped = 0, []
        for rep in reports:
            if rep.resolve() in seen:  # a folder inside another given folder
                found += 1
                continue
            seen.add(rep.resolve())
            try:
                run = read_run(rep)
                why = UNFINISHED if run is None else UNTRAINED if run.untrained else None
            except ValueError as err:
                run, why = None, f"unreadable: {err}"
            if why is not None:
                left_out[str(rep.parent)] = why
                dropped.append(str(rep.parent))
                continue
            runs.append(run)
            found += 1
        if root.is_dir():
            for where, files in run_files_without_report(root).items():
                left_out.setdefault(where, f"no report.json (beside its {', '.join(files)}: the run was deleted or "
                                           "interrupted halfway)")
        if not found:
            told = (f"; left out {len(dropped)}, e.g. {dropped[0]}: {left_out[dropped[0]]}" if dropped else
                    " (no report.json of a `faircl test` run or of a finished sweep trial)")
            raise UserError(f"compare: {folder!r} holds no finished run of trained weights{told}")
    notes += _left_out_notes(left_out)
    _data_sets(runs)
    guessed = [r for r in runs if not r.source.startswith(("fit record", "fit config"))]
    if guessed:
        notes.append(f"{len(guessed)} run(s) without a record of their fit (e.g. {guessed[0].path}): their seed and "
                     "settings are those of the test command's config")
    lost = [f"{r.path}: {name}" for r in runs for name in r.missing]
    if lost:
        notes.append(f"{len(lost)} file(s) named by a run's report are missing ({'; '.join(lost)}): without its per-row "
                     "predictions a run's claims are decided from summary numbers, bias not checked")
    newest: dict[tuple, Run] = {}
    for run in runs:
        key = (tuple(sorted((k, repr(v)) for k, v in run.config.items() if k not in IGNORE)), run.seed)
        if key in newest:
            notes.append(f"{newest[key].path} and {run.path} repeat a setting and seed: the newer is kept")
            if Path(run.path).stat().st_mtime < Path(newest[key].path).stat().st_mtime:
                continue
        newest[key] = run
    return list(newest.values()), notes, left_out


# ---------------------------------------------------------------------------------------------------- formatting
def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.4f}"
    return "—" if v is None else str(v)


def _md(header: list[str], rows: list[list[Any]]) -> str:
    cells = [[_fmt(c).replace("|", "\\|") for c in row] for row in rows]
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *["| " + " | ".join(r) + " |" for r in cells]]) + "\n"


def _csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows([["" if isinstance(c, float) and math.isnan(c) else c for c in r] for r in rows])


def _short(key: str) -> str:
    return key.replace("model.", "").replace("data.", "data:").replace("trainer.", "trainer:")


# ---------------------------------------------------------------------------------------------------- command
def _parser():
    """The options of ``faircl compare`` (a jsonargparse parser; errors raise, :func:`compare` words them)."""
    from jsonargparse import ArgumentParser  # deferred: only when the command runs

    p = ArgumentParser(prog="faircl compare", exit_on_error=False, allow_abbrev=False,
                       description="Compare runs and sweeps: table, selection, Pareto front, baseline.")
    p.add_argument("folders", nargs="+", type=str, help="run folders, sweep folders or folders holding them")
    p.add_argument("--out", required=True, type=str, help="folder for the tables and the plot")
    p.add_argument("--gap", type=str, default="tpr_gap_rms", help="the gap of the Pareto front and the claims")
    p.add_argument("--select", action="append", default=[], metavar="METRIC>=VALUE",
                   help="a constraint of the constrained selection (repeatable)")
    p.add_argument("--minimise", "--minimize", dest="minimise", type=Optional[str],
                   help="the metric the constrained selection minimises (null: the --gap)")
    p.add_argument("--maximise", "--maximize", dest="maximise", type=Optional[str], help="... or maximises")
    p.add_argument("--split", choices=("val", "test"), help="numbers the selections use (default val when every "
                   "run has them, else test)")
    p.add_argument("--baseline", type=Optional[str],
                   help="a run / sweep folder, or KEY=VALUE[,KEY=VALUE] naming one compared setting")
    p.add_argument("--margin", type=float, default=0.02, help="utility non-inferiority margin of the verdicts")
    p.add_argument("--paper-effect", type=Optional[float], help="the change of --gap a paper reports (fraction, "
                   "negative = a reduction, e.g. -0.045): the target of the size axis (a fall reaches it when its "
                   "interval lies below half of it; without it, the gap's smallest effect of interest is the margin)")
    p.add_argument("--leakage", action="store_true", help="also claim that each setting lowers leakage_h (its bias "
                   "tested against the majority-group rate)")
    p.add_argument("--leakage-paper-effect", type=Optional[float], help="the leakage change a paper reports (fraction)")
    p.add_argument("--utility", choices=("accuracy", "balanced_accuracy"), default="accuracy",
                   help="the utility whose loss the margin bounds")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap replicates of the verdicts")
    p.add_argument("--permutations", type=int, default=1000, help="permutations of the bias null")
    p.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier compare in --out")
    return p


def _usage_error(err: Exception) -> UserError:
    """The parser's error as one line: the option, the value given and what it expects."""
    text = " ".join(str(err).split()) if 'Parser key "' not in str(err) else str(err)
    missing = re.fullmatch(r"the following arguments are required: (.*)", text)
    if missing:
        names = ["FOLDER... (the run or sweep folders)" if n == "folders" else f"--{n.replace('_', '-')}"
                 for n in missing.group(1).split(", ")]
        return UserError(f"compare: missing {', '.join(names)} (faircl compare --help)")
    key = re.search(r'Parser key "([^"]+)"', text)
    if key is None:
        return UserError(f"compare: {text} (faircl compare --help)")
    given = re.search(r"(?:Got value|Given value): (.*)", text)
    wanted = [t for t in re.findall(r"<class '(\w+)'>", text) if t != "NoneType"]
    what = {"float": "a number", "int": "a whole number"}.get(wanted[0], wanted[0]) if wanted else "another value"
    option = "--" + key.group(1).replace("_", "-")
    return UserError(f"compare {option} {given.group(1).strip() if given else ''}: expected {what}")


def _mean_sd(s: Setting, metric: str) -> str:
    """``mean ± sd`` of a setting's test ``metric`` over its seeds; the mean alone for one seed (no spread)."""
    m, d = s.stat("test", metric)
    if math.isnan(m):
        return "n/a"
    return f"{m:.4f}" if len(s.runs) < 2 else f"{m:.4f} ± {d:.4f}"


def _difference(e: Any) -> str:
    """A paired difference in points: its interval, or the mean alone on one seed (no interval)."""
    return e.fmt() if e.n_seeds >= MIN_SEEDS else f"{100 * e.mean:+.1f} ({e.n_seeds} seed: no interval)"


def _baseline_md(baseline: Setting, labels: dict[str, str], varied: list[str], columns: list[str], result: Any,
                 undecided: dict[str, str]) -> str:
    """``baseline.md``: the baseline's fit settings, the paired differences of every metric, the verdicts and the
    claims without one."""
    run = baseline.runs[0]
    told = ", ".join(f"{_short(k)}={_fmt(run.config.get(k))}" for k in varied if run.config.get(k) is not None)
    epochs = sorted({str(r.config.get("trainer.max_epochs")) for r in baseline.runs})
    lines = [f"# Against the baseline {labels.get(baseline.name, baseline.name)}\n",
             f"Baseline: {baseline.name} ({told or 'no varied value'}); max_epochs of its fits: "
             f"{', '.join(epochs)}; seeds {', '.join(str(r.seed) for r in baseline.runs)}; settings read from "
             f"{run.source}.\n",
             "Paired by the seed of each checkpoint's fit (method − baseline, test; 95% Student-t interval over the "
             "shared seeds, per-seed summary numbers), in points.\n",
             "| setting | seeds | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for name, diffs in result.differences.items():
        lines.append(f"| {labels.get(name, name)} | {', '.join(map(str, result.seeds[name]))} | "
                     + " | ".join(_difference(diffs[c]) if c in diffs else "n/a" for c in columns) + " |")
    rows = sum(result.from_rows)
    lines += ["", "## Verdicts\n",
              f"{rows} of {len(result.verdicts)} claims decided from per-row predictions (the baseline's bias tested "
              "against the attribute-permutation null over the test and validation rows, the seeds × rows bootstrap, the "
              "intervals at 1 − α/(2m) over the m claims below); the others from per-seed summary numbers, their bias not checked.\n",
              *VERDICT_HEADER, *[verdict_row(v) for v in result.verdicts]]
    if undecided:
        lines += ["", f"## No verdict ({len(undecided)})\n", *[f"- {claim}: no verdict, {why}"
                                                               for claim, why in undecided.items()]]
    return "\n".join(lines) + "\n"


def _too_few_seeds(result: Any, labels: dict[str, str]) -> dict[str, str]:
    """Take the claims on fewer than :data:`MIN_SEEDS` paired seeds out of ``result``'s evidence, so that they get no
    verdict (and no place in the family): one seed has no seed-to-seed variance, its interval is (−∞, ∞), and
    ``faircl bench`` refuses ``--seeds 1`` for it. Returns claim → why it has no verdict."""
    seeds = {labels.get(n, n): s for n, s in result.seeds.items()}
    few = [c.effect.n_seeds < MIN_SEEDS for c in result.evidence]
    undecided = {}
    for c in (c for c, f in zip(result.evidence, few) if f):
        told = seeds.get(c.name.partition(" lowers ")[0], [])
        undecided[c.name] = (f"{c.effect.n_seeds} paired seed{'s' if c.effect.n_seeds != 1 else ''}"
                             f"{' (seed ' + ', '.join(map(str, told)) + ')' if told else ''}; a paired comparison "
                             f"needs at least {MIN_SEEDS} (no seed-to-seed variance)")
    result.evidence = [c for c, f in zip(result.evidence, few) if not f]
    result.from_rows = [r for r, f in zip(result.from_rows, few) if not f]
    return undecided


def _find_baseline(spec: str, settings: list[Setting], runs_of_baseline: list[Run] | None) -> Setting:
    if runs_of_baseline is not None:
        names = {r.setting for r in runs_of_baseline}
        if len(names) != 1:
            raise UserError(f"--baseline {spec}: its runs form {len(names)} settings; name one folder of one setting")
        return next(s for s in settings if s.name in names)
    wanted = {}
    for item in spec.split(","):
        k, eq, v = item.partition("=")
        if not eq:
            raise UserError(f"--baseline {spec}: expected a folder or KEY=VALUE[,KEY=VALUE]")
        wanted[k.strip().removeprefix("--")] = yaml.safe_load(v)
    match = [s for s in settings if all(k in s.runs[0].config and (s.runs[0].config[k] == v or
                                                                  str(s.runs[0].config[k]) == str(v))
                                        for k, v in wanted.items())]
    if len(match) != 1:
        raise UserError(f"--baseline {spec}: matches {len(match)} settings, expected exactly one")
    return match[0]


def compare(argv: list[str]) -> int:
    """``faircl compare ...``; returns the exit status."""
    try:
        opts = _parser().parse_args(argv)
    except Exception as err:  # jsonargparse's ArgumentError: an unknown option, a missing one, a bad value
        if type(err).__name__ != "ArgumentError":
            raise
        raise _usage_error(err) from None
    try:
        constraints = [parse_constraint(c) for c in opts.select]
    except ValueError as err:
        raise UserError(str(err)) from None
    if opts.minimise and opts.maximise:
        raise UserError("--minimise and --maximise exclude each other")
    for flag, value in (("--paper-effect", opts.paper_effect), ("--leakage-paper-effect", opts.leakage_paper_effect)):
        if value is not None and not -1 <= value <= 1:
            raise UserError(f"{flag} {value:g}: give the change as a fraction (-0.045 for 4.5 points less)")
    for flag, value in (("--bootstrap", opts.bootstrap), ("--permutations", opts.permutations)):
        if value < 100:
            raise UserError(f"{flag} must be at least 100, got {value}")
    if not 0 <= opts.margin < 1:
        raise UserError(f"--margin {opts.margin:g}: give the utility margin as a fraction in [0, 1) (0.02 = 2 points)")
    out = Path(opts.out)
    if out.exists() and (out / "compare.json").exists() and not opts.overwrite:
        raise UserError(f"{str(out)!r} already holds the outputs of a compare; pass --overwrite or another --out")
    folders = list(opts.folders)
    baseline_dir = opts.baseline if opts.baseline and Path(opts.baseline).exists() else None
    runs, notes, left_out = collect(folders + ([baseline_dir] if baseline_dir and baseline_dir not in folders else []))
    baseline_runs = None
    if baseline_dir:
        base = Path(baseline_dir).resolve()
        baseline_runs = [r for r in runs if base == Path(r.path).resolve() or base in Path(r.path).resolve().parents]
    settings, varied = group_runs(runs, IGNORE)
    labels = setting_labels(settings, varied)
    columns = metric_columns(runs)
    known = set(columns) | {k for r in runs for k in r.test}
    for name in [opts.gap, opts.minimise, opts.maximise, *[c[0] for c in constraints]]:
        if name and name not in known:
            raise UserError(f"compare: no run reports {name!r}; reported: {', '.join(columns)}")
    split = opts.split or ("val" if all(r.val for r in runs) else "test")
    target = opts.maximise or opts.minimise or opts.gap
    selected = {"DTO": select(settings, split, "dto"), "balanced DTO": select(settings, split, "balanced_dto")}
    label = " and ".join(f"{m}{op}{v:g}" for m, op, v in constraints) or "no constraint"
    selected[f"{'max' if opts.maximise else 'min'} {target} s.t. {label}"] = select(
        settings, split, target, constraints, maximise=bool(opts.maximise))
    mask = front_mask(settings, opts.gap)
    baseline = _find_baseline(opts.baseline, settings, baseline_runs) if opts.baseline else None
    out.mkdir(parents=True, exist_ok=True)

    # every run
    head = ["setting", "label", "trial", "seed", *[_short(k) for k in varied], *columns, "val dto", "predictions",
            "checkpoint", "run"]
    rows = [[r.setting, labels[r.setting], r.trial, r.seed, *[r.config.get(k) for k in varied], *[r.test.get(c, math.nan)
            for c in columns], r.val.get("dto", math.nan), r.predictions, r.checkpoint, r.path]
            for s in settings for r in s.runs]
    _csv(out / "runs.csv", head, rows)
    left_md = (f"\n## Left out ({len(left_out)})\n\n" + _md(["run folder", "why"], [[k, v] for k, v in left_out.items()])
               if left_out else "")
    (out / "runs.md").write_text(f"# Runs ({len(rows)})\n\nTest numbers of each run's checkpoint; `val dto` is the "
                                 "validation DTO of the same checkpoint. Where `predictions` is `knn` or `probe`, "
                                 "accuracy, gaps, leakage and both DTOs are those of the run's per-row predictions "
                                 "(`rows.npz`: a 1-NN or a probe on its embeddings), not of its logits.\n\n"
                                 + _md(head, rows) + left_md)
    # settings
    marks = {s.name: [k for k, v in selected.items() if v is s] for s in settings}
    shead = ["setting", "label", "seeds", *[_short(k) for k in varied], *[f"{c} (mean ± sd)" for c in columns],
             f"{split} dto", "on front", "selected by"]
    srows, scsv = [], []
    for s, on in zip(settings, mask):
        stats = [s.stat("test", c) for c in columns]
        srows.append([s.name, labels[s.name], len(s.runs), *[s.values.get(k) for k in varied],
                      *[_mean_sd(s, c) for c in columns],
                      s.stat(split, "dto")[0], "yes" if on else "", ", ".join(marks[s.name])])
        scsv.append([s.name, labels[s.name], len(s.runs), *[s.values.get(k) for k in varied],
                     *[x for m, d in stats for x in (m, d if len(s.runs) > 1 else "n/a")],
                     s.stat(split, "dto")[0], bool(on), "; ".join(marks[s.name])])
    gap_arrow = f" {mark(opts.gap)}" if mark(opts.gap) else ""
    (out / "settings.md").write_text(f"# Settings ({len(settings)})\n\nMean ± standard deviation over seeds (test; "
                                     "the mean alone for a setting of one seed). Pareto front: test accuracy ↑ "
                                     f"against test {opts.gap}{gap_arrow}.\n\n"
                                     + _md(shead, srows))
    _csv(out / "settings.csv", ["setting", "label", "seeds", *varied, *[f"{c}_{x}" for c in columns for x in ("mean", "sd")],
                                f"{split}_dto", "on_front", "selected_by"], scsv)
    # selection
    sel_lines = [f"# Model selection\n\nChosen on the **{split}** numbers of each setting (mean over seeds); test "
                 "numbers reported.\n", "| rule | setting | " + " | ".join(_short(k) for k in varied)
                 + " | test accuracy | test balanced accuracy | test " + opts.gap + " |",
                 "|---|---|" + "---|" * (len(varied) + 3)]
    for rule, s in selected.items():
        if s is None:
            sel_lines.append(f"| {rule} | none satisfies the constraint |" + " |" * (len(varied) + 3))
            continue
        numbers = " | ".join(_mean_sd(s, m) for m in ("accuracy", "balanced_accuracy", opts.gap))
        sel_lines.append(f"| {rule} | {labels[s.name]} ({s.name}) | " + " | ".join(_fmt(s.values.get(k)) for k in varied)
                         + f" | {numbers} |")
    (out / "selection.md").write_text("\n".join(sel_lines) + "\n")
    # baseline
    result = None
    if baseline is not None:
        try:
            result = baseline_evidence(baseline, settings, columns, opts.gap, labels, utility=opts.utility,
                                       paper_effect=opts.paper_effect, leakage=opts.leakage,
                                       leakage_paper_effect=opts.leakage_paper_effect, n_bootstrap=opts.bootstrap,
                                       n_permutations=opts.permutations)
        except ValueError as err:
            raise UserError(f"compare --baseline: {err}") from None
        undecided = _too_few_seeds(result, labels)
        result.verdicts = decide(result.evidence, margin=opts.margin) if result.evidence else []
        (out / "baseline.md").write_text(_baseline_md(baseline, labels, varied, columns, result, undecided))
        unpaired = [labels[s.name] for s in settings if s is not baseline and s.name not in result.seeds]
        if unpaired:
            notes.append(f"no claim for {', '.join(unpaired)}: no fit seed shared with the baseline "
                         f"(seeds {', '.join(str(r.seed) for r in baseline.runs)})")
    title = f"accuracy vs {opts.gap}: {len(settings)} settings, {len(runs)} runs (mean ± sd over seeds)"
    plot_front(settings, opts.gap, out / "front.png", {n: ", ".join(k) for n, k in marks.items() if k},
               baseline.name if baseline is not None else None, title=title, labels=labels)
    payload = {
        "split": split, "gap": opts.gap, "varied": varied, "notes": notes, "left_out": left_out,
        "runs": [{"setting": r.setting, "trial": r.trial, "seed": r.seed, "path": r.path, "checkpoint": r.checkpoint,
                  "settings": {k: r.config.get(k) for k in varied}, "test": r.test, "val": r.val} for r in runs],
        "settings": [{"name": s.name, "values": s.values, "seeds": [r.seed for r in s.runs], "on_front": bool(on),
                      "mean": {c: s.stat("test", c)[0] for c in columns},
                      "sd": {c: s.stat("test", c)[1] if len(s.runs) > 1 else None for c in columns}} for s, on in zip(settings, mask)],
        "front": [s.name for s, on in zip(settings, mask) if on],
        "selected": {k: (s.name if s is not None else None) for k, s in selected.items()},
        "labels": labels,
        "baseline": None if result is None else {
            "setting": baseline.name, "label": labels.get(baseline.name),
            "verdicts": [{"claim": v.name, "verdict": v.verdict, "reason": v.reason, "from_rows": rows,
                          **dataclasses.asdict(v)} for v, rows in zip(result.verdicts, result.from_rows)],
            "undecided": [{"claim": claim, "verdict": None, "reason": f"no verdict: {why}"}
                          for claim, why in undecided.items()],
            "seeds": result.seeds,
            "differences": {n: {c: {"mean": e.mean, "lo": e.lo, "hi": e.hi, "p": e.p_value} for c, e in d.items()}
                            for n, d in result.differences.items()}},
    }
    (out / "compare.json").write_text(json.dumps(payload, indent=2, default=str, allow_nan=True))
    for note in notes:
        print(f"faircl compare: note: {note}")
    print(f"faircl compare: {len(runs)} runs in {len(settings)} settings; front: "
          + ", ".join(labels[n] for n in payload["front"]))
    for k, v in payload["selected"].items():
        print(f"selected by {k}: {labels[v] if v else 'none'}")
    if result is not None:
        for v in result.verdicts:
            print(f"{v.verdict}: {v.name} — {v.effect.fmt()} points ({v.reason})")
        for claim, why in undecided.items():
            print(f"no verdict: {claim} — {why}")
    print(f"written to {out}: runs.md/csv, settings.md/csv, selection.md, front.png"
          + (", baseline.md" if result else "") + ", compare.json")
    return 0
