"""``faircl bench``: a method — built in or a class of your own — through a suite of the papers' protocols, against
their baselines, with verdicts.

    faircl bench --list
    faircl bench text --method ConFair --method.init_args.normalize false --seeds 3 --out bench/confair
    faircl bench text --method my_method.MyLoss --quick --out bench/mine      # MyLoss in ./my_method.py

The options are parsed by jsonargparse; ``--method`` takes a class and its ``init_args`` as ``faircl fit`` takes
``--model`` (a name, a dotted path, or ``{"class_path": ..., "init_args": {...}}``). The protocol gives the rest of
the method's arguments: its ``model:`` block (the encoder) under the method's own, and the data's sizes
(``num_classes``, ``num_groups``, ``input_dim``, ``input_kind``), linked in every run. Before any run the method is
checked: an argument its class does not take, or a class that refuses its arguments (built once, with the first
protocol's model arguments and stand-in data sizes), is one line and exit status 2.

For every protocol of the suite (:mod:`faircl.bench.spec`) that accepts the method's input it runs the method and the
protocol's baselines on the same seeds (:mod:`faircl.bench.runner`; baselines are cached by protocol and seed and
reused), then decides each claim from the per-row predictions with :mod:`faircl.eval.baseline` — the code path of
``faircl compare --baseline`` — and writes ``results.md``, ``results.csv``, ``tradeoff.png`` and ``bench.json`` in
``--out``. Killed or interrupted, it resumes where it stopped when run again with the same arguments; run again
with a higher ``--max-seeds`` it continues. An ``--out`` that holds the results of a bench with other settings
(``bench.json``'s ``settings``: the suite, the method, the protocols, the seeds, the options of the verdicts) is
refused before any run, unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import platform
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from jsonargparse import ActionConfigFile, ArgumentParser

from faircl.bench.checkpoint_selection import describe
from faircl.bench.checks import check_bench, check_importable
from faircl.bench.runner import BENCH_PRELOAD, MethodSpec, default_cache, plan, resolve_method
from faircl.bench.spec import Protocol, deep_merge, load_suite, suite_names
from faircl.cli.launchers import add_launcher_arguments, executor_from, unknown_setting
from faircl.runs.executors import LocalPool
from faircl.runs.user_error import ParserRefusal, UserError, parser_refusal

__all__ = ["bench"]

#: a method's arguments that each run takes from its protocol's data (linked, as in ``faircl fit``), not an option
LINKED = ("num_classes", "num_groups", "input_dim", "input_kind")
#: the data sizes the method is built with once, before any run, in place of those its runs link from the data
STAND_IN = {"num_classes": 2, "num_groups": 2, "input_dim": 2}


def _quick_seeds() -> str:
    """The seeds of the shipped protocols' quick variants: ``"2"``, or a range ``"2-3"``."""
    counts = sorted({p.seeds for suite in suite_names() for p in load_suite(suite, quick=True)})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def _parser() -> ArgumentParser:
    # deferred: torch and Lightning, only once a bench is parsed (--list needs neither the methods nor the parser)
    import faircl.methods  # noqa: F401  # deferred: torch; the built-in methods, found by name (--method ConFair)
    from faircl.methods.base import FairModule  # deferred: torch and Lightning

    p = ArgumentParser(
        prog="faircl bench", exit_on_error=False,
        description="Run a method through a suite of protocols against their baselines and decide each claim "
        "(per-row bias null, seed-paired effects; direction, size and utility read at 1 − α/(2m)).",
        epilog="The protocol gives the method its encoder (model:) and the data its sizes. Baseline runs are cached "
        "in --cache (default $FAIRCL_CACHE/bench or ~/.cache/faircl/bench) and reused; an interrupted bench resumes "
        "when run again with the same arguments.")
    p.add_argument("suite", nargs="?", help="text | vision | embeddings, or a folder of protocol .yaml files")
    p.add_argument("--list", action="store_true", help="list the suites and their protocols, then exit")
    p.add_subclass_arguments(
        FairModule, "method", required=False, instantiate=False, fail_untyped=False, skip=set(LINKED),
        help="a faircl method (ConFair) or the dotted path of a FairModule subclass (my_method.MyLoss, importable "
        "from the current folder); its arguments: --method.init_args.NAME VALUE or --method.NAME VALUE "
        "(--method.help CLASS lists them)")
    p.add_argument("--name", help="the method's name in the tables (none: its class name)")
    p.add_argument("--seeds", type=int, help="seeds 0..N-1 (none: each protocol's own number)")
    p.add_argument("--max-seeds", type=int, help="add seeds where a claim is still inconclusive, up to N per "
                   "protocol: looks at the protocol's seeds, then twice, four times as many, ..., then N, with α "
                   "spent over the looks (faircl.eval.sequential); finished runs are reused, so a higher N continues")
    p.add_argument("--against", action="append", default=[], help="also claim that the method has a lower gap than "
                   "this method (a faircl method's name or a class's dotted path; run on each protocol with the "
                   "protocol's model arguments and cached like a baseline), in a family of its own decided after the protocols' claims, its utility "
                   "judged against the protocol's baseline (repeatable)")
    p.add_argument("--out", help="results folder")
    p.add_argument("--overwrite", action="store_true", help="replace the results in --out of a bench with other "
                   "settings (without it such an --out is refused; the same settings resume or continue)")
    p.add_argument("--quick", action="store_true", help="each protocol's quick variant (small data, short budget, "
                   f"{_quick_seeds()} seeds): minutes on 2 CPU cores, for trying a method; verdicts then have little "
                   "power")
    p.add_argument("--protocol", action="append", default=[], help="run only these protocols (repeatable)")
    p.add_argument("--cache", help="baseline cache folder")
    p.add_argument("--fresh-processes", action="store_true", help="the same as --launcher fresh")
    add_launcher_arguments(p, "the runs")
    p.add_argument("--config", action=ActionConfigFile, help="a YAML file of these options, e.g. a slurm: section")
    p.add_argument("--alpha", type=float, default=0.05, help="family-wise error rate")
    p.add_argument("--permutations", type=int, default=1000, help="permutations of the bias null")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    return p


def _arguments(cls: type) -> list[str]:
    """The arguments ``cls`` takes: its ``__init__``'s and, through ``**kwargs``, its parents' (the names the
    parser resolves)."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = list(inspect.signature(klass.__init__).parameters.values())[1:]
        names += [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names


def _unknown(cls: type, names: list[str]) -> UserError | None:
    """The first of ``names`` that ``cls`` takes not as an option, in one line with the ones it takes."""
    accepted = [n for n in _arguments(cls) if n not in LINKED]
    bad = next((n for n in names if n not in accepted), None)
    if bad is None:
        return None
    if bad in LINKED:
        return UserError(f"bench: --method.init_args.{bad}: each protocol's data sets it ({', '.join(LINKED)} are "
                        "linked from the data in every run)")
    return UserError(f"bench: --method.init_args.{bad}: {cls.__name__} takes no argument {bad!r} (its arguments: "
                    f"{', '.join(accepted)})")


def _required(cls: type) -> list[str]:
    """The arguments of ``cls.__init__`` without a default that the options must give (the linked data sizes
    aside): the protocol's model block is merged in later, per protocol."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p.name for p in params
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in LINKED]


def _class_path(value: str | None) -> str | None:
    """The class that ``--method``'s value names: a name, a dotted path, or the ``class_path`` of a mapping."""
    try:
        spec = yaml.safe_load(value) if value and value.lstrip().startswith("{") else value
    except yaml.YAMLError:
        return None
    if isinstance(spec, dict):
        spec = spec.get("class_path")
    return spec if isinstance(spec, str) and spec else None


def _method_problem(refusal: ParserRefusal) -> UserError | None:
    """Why the parser refused ``--method`` or an argument of it, in one line, where the reason is a name: a class that
    is not found (:func:`resolve_method`) or whose module does not import (its file and line), a required argument
    not given, or an argument the class does not take. ``None`` for any other reason (a value of the wrong type: the
    parser's own line stands)."""
    if refusal.option == "method":
        class_path = _class_path(refusal.value)
        if class_path is None:
            return None
        try:
            check_importable(class_path, "--method")
            _, cls = resolve_method(class_path)
        except UserError as err:
            return err
        # the parser's reason names the required arguments it was not given (its wording differs by version)
        missing = [n for n in _required(cls) if re.search(rf"\b{re.escape(n)}\b", refusal.reason or "")]
        if missing:
            return UserError(f"bench: {cls.__name__} has no default for {', '.join(missing)}: give "
                             f"--method.init_args.{missing[0]} VALUE, or a default in its __init__")
        return None
    if refusal.unknown and refusal.owner and refusal.option.startswith("method.init_args."):
        _, cls = resolve_method(refusal.owner)
        return _unknown(cls, [refusal.option.removeprefix("method.init_args.").split(".")[0]])
    return None


def _options(argv: list[str]) -> Any:
    parser = _parser()
    try:
        # without the defaults: the method's init_args are the ones given, the protocol's model block fills the rest
        given = parser.parse_args(argv, defaults=False)
    except argparse.ArgumentError as err:
        refusal = parser_refusal(err)
        problem = _method_problem(refusal) if refusal is not None else unknown_setting(err)
        if problem is not None:
            raise problem from None
        raise
    opts = parser.get_defaults()
    opts.update(given)
    return opts


def _folder(option: str, value: str) -> Path:
    """``value`` as a folder that is or can be made: a file on its path is one line."""
    path = Path(value).expanduser()
    blocked = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise UserError(f"bench: {option} {value}: {blocked} is a file; give a folder (made if missing)")
    return path


def _built_once(method: MethodSpec, protocol: Protocol) -> None:
    """Build the method as its runs will (the protocol's model arguments under the method's own, with stand-in data
    sizes :data:`STAND_IN`): a class that refuses its arguments is one line here, not a failure of every run."""
    kwargs = {**deep_merge(protocol.model, method.init_args), **STAND_IN, "input_kind": protocol.input_kind}
    try:
        method.cls(**kwargs)
    except (ValueError, TypeError) as err:
        raise UserError(f"bench: {method.cls.__name__} refused its arguments on {protocol.name} (--method's "
                       f"{json.dumps(method.init_args)} over the protocol's model: {json.dumps(protocol.model)}): "
                       f"{' '.join(str(err).split())}") from None


def _list() -> int:
    for suite in suite_names():
        protocols = load_suite(suite)
        print(f"{suite}: {len(protocols)} protocols")
        for p in protocols:
            need = p.missing_data()
            claims = "; ".join(f"lowers {c.gap} vs {c.baseline}" + (" and leakage" if c.leakage else "")
                               for c in p.claims)
            print(f"  {p.name} (v{p.version}, {p.input_kind}{', control' if p.control else ''}"
                  f"{', on request: --protocol ' + p.name if p.on_request else ''}): {p.title}")
            print(f"      {p.seeds} seeds, {p.trainer.get('max_epochs', '?')} epochs, "
                  f"selection {describe(p.selection, p.trainer)}; "
                  f"claims: {claims}"
                  + (f"; paper: {p.paper}" if p.paper else "") + (f"\n      not runnable here: {need}" if need
                                                                     else ""))
    return 0


def _with_against(p: Protocol, against: list[str], say) -> Protocol:
    """``p`` with each ``--against`` method as a baseline (the protocol's model arguments, cached like its own
    baselines) and, for each claim on a gap, score or statistic against the protocol's first baseline, the same claim
    against it, its leakage claim included (no paper effect: judged against the protocol's smallest effect of
    interest; a family of its own, :func:`faircl.bench.results.decide_bench`)."""
    if not against:
        return p
    baselines, claims = dict(p.baselines), list(p.claims)
    first = next(iter(p.baselines))
    for name in against:
        if name == first:
            say(f"faircl bench: --against {name}: {p.name} claims against it already")
            continue
        if name in p.baselines:
            other = name
        else:
            try:
                other_path, other_cls = resolve_method(name)
            except UserError as err:  # worded for --method: say which option named it
                raise UserError(str(err).replace(f"--method {name!r}", f"--against {name!r}", 1)) from None
            why = p.skip_reason(other_cls)
            if why:
                say(f"faircl bench: --against {name}: not on {p.name}: {why}")
                continue
            other = other_cls.__name__ if "." in name else name
            baselines[other] = {"class_path": other_path}
        claims += [dataclasses.replace(c, baseline=other, paper_effect=None, leakage_paper_effect=None, against=True)
                   for c in p.claims if c.baseline == first]
    return dataclasses.replace(p, baselines=baselines, claims=claims)


def _design_text(found, max_seeds: int | None, alpha: float) -> str:
    """The design of the run in one sentence: fixed, or the looks and their levels."""
    seeds = ", ".join(f"{name} {n}" for name, n in found.seeds.items())
    if max_seeds is None:
        return f"Design: fixed, one look at α = {alpha:g}. Seeds run: {seeds}."
    looks = "; ".join(f"look {k.number} at level {k.level:.3g}" for k in found.looks)
    return (f"Design: sequential up to {max_seeds} seeds per protocol (`--max-seeds`; faircl.eval.sequential: "
            f"looks at the protocol's seeds, then 2×, 4×, … and the cap, α = {alpha:g} spent over them: {looks}); "
            f"a claim's verdict is from the look that decided it. Seeds run: {seeds}.")


def _settings(opts: Any, method: MethodSpec, runnable: list[Protocol], starts: dict[str, int]) -> dict[str, Any]:
    """What a bench's results depend on, as ``bench.json`` records it (``settings``)."""
    return json.loads(json.dumps({
        "suite": opts.suite, "quick": bool(opts.quick),
        "method": {"label": method.label, "class_path": method.class_path, "init_args": method.init_args},
        "protocols": {p.name: p.version for p in runnable}, "seeds": starts, "max_seeds": opts.max_seeds,
        "against": list(opts.against), "alpha": opts.alpha, "permutations": opts.permutations,
        "bootstrap": opts.bootstrap}, default=str))


def _recorded_settings(info: dict[str, Any]) -> dict[str, Any]:
    """The settings of the bench that wrote ``info`` (a ``bench.json``); from its other entries where it has no
    ``settings`` (written by an older faircl): only those it records."""
    if isinstance(info.get("settings"), dict):
        return info["settings"]
    method, design = info.get("method") or {}, info.get("design") or {}
    found = {"suite": info.get("suite"), "quick": info.get("quick"),
             "method": {k: method.get(k) for k in ("label", "class_path", "init_args")},
             "protocols": {n: p.get("version") for n, p in (info.get("protocols") or {}).items()},
             "max_seeds": design.get("max_seeds"), "against": info.get("against"), "alpha": design.get("alpha")}
    keys = {"suite": "suite" in info, "quick": "quick" in info, "method": "method" in info,
            "protocols": "protocols" in info, "max_seeds": "max_seeds" in design, "against": "against" in info,
            "alpha": "alpha" in design}
    return {k: v for k, v in found.items() if keys[k]}


def _same_bench(out: Path, now: dict[str, Any], overwrite: bool) -> None:
    """Refuse an ``--out`` holding the results of a bench with other settings than ``now`` (a higher ``--max-seeds``
    is the same bench continued), unless ``overwrite``."""
    path = out / "bench.json"
    if overwrite or not path.is_file():
        return
    try:
        info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"bench: {path} is not readable JSON ({err}); pass --overwrite to replace the results in "
                       f"{out}, or give another --out") from None
    differ = []
    for key, was in _recorded_settings(info if isinstance(info, dict) else {}).items():
        new = now.get(key)
        if key == "max_seeds" and (was is None or (new is not None and new >= was)):
            continue  # a continuation: more seeds where a claim is still open, the runs done reused
        if was != new:
            differ.append(f"{key} {json.dumps(was)} there, {json.dumps(new)} now")
    if differ:
        raise UserError(f"bench: --out {out} holds the results of a bench with other settings ({path}: "
                       f"{'; '.join(differ)}); give another --out, the same settings to resume (or a higher "
                       "--max-seeds to continue), or --overwrite to replace them")


def bench(argv: list[str]) -> int:
    """``faircl bench``; returns the exit status (1 when a run failed, 2 for a usage error)."""
    from faircl.bench.looks import run_looks  # deferred: NumPy, SciPy and Lightning (--list needs none)
    from faircl.bench.results import write_results  # deferred: with faircl.bench.looks

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # --method my_method.MyLoss: ./my_method.py
    opts = _options(argv)
    if opts.list:
        return _list()
    if not opts.suite or not opts.method or not opts.out:
        raise UserError("bench: give a suite, --method and --out, e.g. faircl bench text --method ConFair --quick "
                       "--out bench/confair (faircl bench --list shows the suites)")
    if opts.seeds is not None and opts.seeds < 2:
        raise UserError(f"bench: --seeds {opts.seeds}: a paired comparison needs at least 2 seeds")
    class_path, cls = resolve_method(opts.method.class_path)
    problem = _unknown(cls, list(opts.method.get("dict_kwargs") or {}))  # --method.dict_kwargs.NAME: not taken
    if problem is not None:
        raise problem
    init_args = opts.method.init_args.as_dict() if opts.method.get("init_args") else {}
    method = MethodSpec(opts.name or cls.__name__, class_path, init_args, cls)
    out = _folder("--out", opts.out)
    cache = _folder("--cache", opts.cache) if opts.cache else default_cache()
    protocols = load_suite(opts.suite, quick=opts.quick)
    if opts.protocol:
        unknown = sorted(set(opts.protocol) - {p.name for p in protocols})
        if unknown:
            raise UserError(f"bench: no protocol {', '.join(unknown)} in suite {opts.suite!r} "
                           f"({', '.join(p.name for p in protocols)})")
        protocols = [p for p in protocols if p.name in opts.protocol]
    left_out = [p.name for p in protocols if p.on_request and not opts.protocol]
    protocols = [p for p in protocols if p.name not in left_out]
    skipped = [(p.name, p.skip_reason(cls)) for p in protocols if p.skip_reason(cls)]
    runnable = [p for p in protocols if p.name not in dict(skipped)]
    if not runnable:
        raise UserError(f"bench: {method.label} runs on no protocol of {opts.suite!r}: "
                       + "; ".join(f"{n}: {w}" for n, w in skipped))
    check_bench(runnable, method, opts.against, _built_once)  # the classes named and --against, before any run
    _built_once(method, runnable[0])
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    if left_out:
        say(f"faircl bench: {len(left_out)} protocol(s) of {opts.suite} run only when named with --protocol, left "
            f"out: {', '.join(left_out)}")
    for name, why in skipped:
        say(f"faircl bench: skipped {name}: {why}")
    runnable = [_with_against(p, opts.against, say) for p in runnable]
    starts = {p.name: opts.seeds or p.seeds for p in runnable}
    if opts.max_seeds is not None and opts.max_seeds < max(starts.values()):
        raise UserError(f"bench: --max-seeds {opts.max_seeds} is below the seeds a protocol starts with "
                       f"({max(starts.values())}); give at least that many")
    settings = _settings(opts, method, runnable, starts)
    launcher = "fresh" if opts.fresh_processes else opts.launcher
    executor = executor_from(launcher, opts.slurm, out, local=LocalPool(BENCH_PRELOAD))
    _same_bench(out, settings, opts.overwrite)
    first = {p.name: plan(p, method, list(range(starts[p.name])), out, cache) for p in runnable}
    every = [t for ts in first.values() for t in ts]
    say(f"faircl bench: {method.label} ({class_path}) on {len(runnable)} protocol(s) of {opts.suite}"
        f"{' (quick)' if opts.quick else ''}: {len(every)} runs ({sum(t.baseline for t in every)} baseline runs, "
        f"cached in {cache})" + (f", then more seeds up to {opts.max_seeds} where a claim is still open"
                                 if opts.max_seeds else "") + f"; results in {out}")
    start, began = time.perf_counter(), time.time()
    try:
        found = run_looks(runnable, method, starts, opts.max_seeds, out, cache, alpha=opts.alpha,
                          n_permutations=opts.permutations, n_bootstrap=opts.bootstrap,
                          executor=executor, say=say)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"the finished runs are kept; to resume, run from {os.getcwd()}: "
                                f"faircl bench {shlex.join(argv)}") from None
    train_s = time.perf_counter() - start
    rows, tasks, failures, undecided = found.rows, found.tasks, found.failures, found.undecided
    every = [t for ts in tasks.values() for t in ts]
    n_base = sum(t.baseline for t in every)
    reused = sum(t.baseline and t.done and (t.folder / "run.json").stat().st_mtime < began for t in every)
    cpu_all = sum(t.record().get("cpu_s", 0.0) for t in every if t.done)  # what the evidence cost, reused or not
    for line in undecided:
        say(f"faircl bench: claim not decided: {line}")
    header = [f"Method **{method.label}** (`{class_path}`{', ' + json.dumps(init_args) if init_args else ''}) on "
              f"suite **{opts.suite}**{' (quick: small data, short budget; little power)' if opts.quick else ''}.",
              "",
              f"Protocols: {', '.join(f'{p.name} v{p.version}' for p in runnable)}. Runs: {len(every)}, of which "
              f"{n_base} baseline runs ({reused} reused from the cache {cache}, {n_base - reused} trained now); "
              f"wall time of this invocation's runs {train_s:.0f} s on {platform.node() or 'this machine'}; CPU time of "
              f"all {len(every)} runs (reused ones included) {cpu_all / 60:.1f} min."
              + (f" Left out (on request only: `--protocol NAME`): {', '.join(left_out)}." if left_out else ""),
              "", _design_text(found, opts.max_seeds, opts.alpha)]
    md, csv_path, png = write_results(out, rows, skipped, header, failures, undecided)
    (out / "bench.json").write_text(json.dumps({
        "settings": settings,  # what _same_bench compares with a later bench into the same --out
        "suite": opts.suite, "quick": opts.quick, "method": {"label": method.label, "class_path": class_path,
                                                             "init_args": init_args, "key": method.key()},
        "protocols": {p.name: {"version": p.version, "key": p.key(), "source": p.source} for p in runnable},
        "skipped": dict(skipped), "undecided": undecided, "failures": failures, "wall_s": round(train_s, 1),
        "cpu_s": round(cpu_all, 1), "decide_cpu_s": round(time.process_time(), 1),
        "design": {"max_seeds": opts.max_seeds, "alpha": opts.alpha, "seeds": found.seeds,
                   "looks": [{"number": k.number, "level": k.level, "seeds": k.seeds} for k in found.looks]},
        "against": opts.against,
        "runs": [{"protocol": t.protocol.name, "setting": t.setting, "seed": t.seed, "baseline": t.baseline,
                  "folder": str(t.folder), **(t.record() if t.done else {"failed": True})} for t in every],
        "claims": [{"protocol": r.protocol, "claim": r.claim, "verdict": r.verdict.verdict,
                    "reason": r.verdict.reason, "effect": r.verdict.effect.mean, "seeds": r.seeds,
                    "seeds_needed": r.verdict.seeds_needed, "look": r.extra.get("look")} for r in rows],
    }, indent=2, default=str))
    print(md.read_text())
    say(f"faircl bench: wrote {md}, {csv_path}" + (f", {png}" if png else "") + f", {out / 'bench.json'}")
    return 1 if failures else 0
