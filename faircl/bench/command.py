"""``faircl bench``: a method — built in or a class of your own — through a suite of the papers' protocols, against
their baselines, with verdicts.

    faircl bench --list
    faircl bench text --method ConFair --method.init_args.normalize false --seeds 3 --out bench/confair
    faircl bench text --method my_method.MyLoss --quick --out bench/mine      # MyLoss in ./my_method.py

For every protocol of the suite (:mod:`faircl.bench.spec`) that accepts the method's input it runs the method and the
protocol's baselines on the same seeds (:mod:`faircl.bench.runner`; baselines are cached by protocol and seed and
reused), then decides each claim from the per-row predictions with :mod:`faircl.eval.baseline` — the code path of
``faircl compare --baseline`` — and writes ``results.md``, ``results.csv``, ``tradeoff.png`` and ``bench.json`` in
``--out``. Killed, it resumes where it stopped when run again with the same arguments.
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from faircl.bench.checkpoint_selection import describe
from faircl.bench.runner import MethodSpec, default_cache, plan, resolve_method, run_tasks
from faircl.bench.spec import load_suite, suite_names
from faircl.cli.config_files import CLIError

__all__ = ["bench"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="faircl bench", description="Run a method through a suite of protocols against their baselines and "
        "decide each claim (per-row bias null, seed-paired effects, Holm over all claims).",
        epilog="Method arguments: --method.init_args.NAME VALUE (or --method.NAME VALUE), VALUE read as YAML. "
        "Baseline runs are cached in --cache (default $FAIRCL_CACHE/bench or ~/.cache/faircl/bench) and reused.")
    p.add_argument("suite", nargs="?", help="text | vision | embeddings, or a folder of protocol .yaml files")
    p.add_argument("--list", action="store_true", help="list the suites and their protocols, then exit")
    p.add_argument("--method", help="a faircl method (ConFair) or the dotted path of a FairModule subclass "
                   "(my_method.MyLoss, importable from the current folder)")
    p.add_argument("--name", help="the method's name in the tables (default: its class name)")
    p.add_argument("--seeds", type=int, help="seeds 0..N-1 (default: each protocol's own number)")
    p.add_argument("--out", help="results folder")
    p.add_argument("--quick", action="store_true", help="each protocol's quick variant (small data, short budget, "
                   "2 seeds): minutes on 2 CPU cores, for trying a method; verdicts then have little power")
    p.add_argument("--protocol", action="append", default=[], help="run only these protocols (repeatable)")
    p.add_argument("--cache", help="baseline cache folder")
    p.add_argument("--fresh-processes", action="store_true", help="start every run as a new Python process instead "
                   "of forking it from the pre-imported worker (slower; for comparing)")
    p.add_argument("--alpha", type=float, default=0.05, help="family-wise error rate (0.05)")
    p.add_argument("--permutations", type=int, default=1000, help="permutations of the bias null (1000)")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (2000)")
    return p


def _method_args(extra: list[str]) -> dict[str, Any]:
    """``--method.init_args.k v`` / ``--method.k=v`` pairs → ``{k: v}`` (values as YAML); anything else is refused."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        arg = extra[i]
        if not arg.startswith("--method."):
            raise CLIError(f"bench: unrecognized argument {arg!r} (faircl bench --help)")
        key, eq, value = arg[len("--method."):].partition("=")
        if not eq:
            if i + 1 >= len(extra):
                raise CLIError(f"bench: {arg} needs a value")
            value, i = extra[i + 1], i + 1
        key = key[len("init_args."):] if key.startswith("init_args.") else key
        if not key:
            raise CLIError(f"bench: {arg}: name the argument, e.g. --method.init_args.temperature 0.1")
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key] = value
        i += 1
    return out


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


def _check_method_args(cls: type, args: dict[str, Any]) -> None:
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    unknown = [k for k in args if k not in params]
    if unknown:
        known = [k for k in params if k != "self"]
        raise CLIError(f"bench: {cls.__name__} has no argument {', '.join(map(repr, unknown))} (its arguments: "
                       f"{', '.join(known)})")


def bench(argv: list[str]) -> int:
    """``faircl bench``; returns the exit status (1 when a run failed, 2 for a usage error)."""
    from faircl.bench.results import decide_bench, write_results  # deferred: NumPy, SciPy and Lightning (--list)

    opts, extra = _parser().parse_known_args(argv)
    if opts.list:
        return _list()
    if not opts.suite or not opts.method or not opts.out:
        raise CLIError("bench: give a suite, --method and --out, e.g. faircl bench text --method ConFair --quick "
                       "--out bench/confair (faircl bench --list shows the suites)")
    if opts.seeds is not None and opts.seeds < 2:
        raise CLIError(f"bench: --seeds {opts.seeds}: a paired comparison needs at least 2 seeds")
    init_args = _method_args(extra)
    class_path, cls = resolve_method(opts.method)
    _check_method_args(cls, init_args)
    method = MethodSpec(opts.name or cls.__name__, class_path, init_args, cls)
    protocols = load_suite(opts.suite, quick=opts.quick)
    if opts.protocol:
        unknown = sorted(set(opts.protocol) - {p.name for p in protocols})
        if unknown:
            raise CLIError(f"bench: no protocol {', '.join(unknown)} in suite {opts.suite!r} "
                           f"({', '.join(p.name for p in protocols)})")
        protocols = [p for p in protocols if p.name in opts.protocol]
    out, cache = Path(opts.out), Path(opts.cache) if opts.cache else default_cache()
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    left_out = [p.name for p in protocols if p.on_request and not opts.protocol]
    if left_out:
        protocols = [p for p in protocols if p.name not in left_out]
        say(f"faircl bench: {len(left_out)} protocol(s) of {opts.suite} run only when named with --protocol, left "
            f"out: {', '.join(left_out)}")
    skipped, runnable = [], []
    for p in protocols:
        why = p.skip_reason(cls)
        if why:
            skipped.append((p.name, why))
            say(f"faircl bench: skipped {p.name}: {why}")
        else:
            runnable.append(p)
    if not runnable:
        raise CLIError(f"bench: {method.label} runs on no protocol of {opts.suite!r}: "
                       + "; ".join(f"{n}: {w}" for n, w in skipped))
    tasks = {p.name: plan(p, method, list(range(opts.seeds or p.seeds)), out, cache) for p in runnable}
    every = [t for ts in tasks.values() for t in ts]
    say(f"faircl bench: {method.label} ({class_path}) on {len(runnable)} protocol(s) of {opts.suite}"
        f"{' (quick)' if opts.quick else ''}: {len(every)} runs ({sum(t.baseline for t in every)} baseline runs, "
        f"cached in {cache}); results in {out}")
    n_base = sum(t.baseline for t in every)
    reused = sum(t.baseline and t.done for t in every)
    start = time.perf_counter()
    failures = run_tasks(every, say=say, fresh=opts.fresh_processes)
    train_s = time.perf_counter() - start
    say("faircl bench: deciding the claims (bias null, bootstrap, Holm)")
    undecided: list[str] = []
    rows = decide_bench(runnable, tasks, method.label, alpha=opts.alpha, n_permutations=opts.permutations,
                        n_bootstrap=opts.bootstrap, undecided=undecided)
    for line in undecided:
        say(f"faircl bench: claim not decided: {line}")
    header = [f"Method **{method.label}** (`{class_path}`{', ' + json.dumps(init_args) if init_args else ''}) on "
              f"suite **{opts.suite}**{' (quick: small data, short budget; little power)' if opts.quick else ''}.",
              "",
              f"Protocols: {', '.join(f'{p.name} v{p.version}' for p in runnable)}. Runs: {len(every)}, of which "
              f"{n_base} baseline runs ({reused} reused from the cache {cache}, {n_base - reused} trained now); "
              f"wall time of this invocation's runs {train_s:.0f} s on {platform.node() or 'this machine'}."
              + (f" Left out (on request only: `--protocol NAME`): {', '.join(left_out)}." if left_out else "")]
    md, csv_path, png = write_results(out, rows, skipped, header, failures, undecided)
    (out / "bench.json").write_text(json.dumps({
        "suite": opts.suite, "quick": opts.quick, "method": {"label": method.label, "class_path": class_path,
                                                             "init_args": init_args, "key": method.key()},
        "protocols": {p.name: {"version": p.version, "key": p.key(), "source": p.source} for p in runnable},
        "skipped": dict(skipped), "undecided": undecided, "failures": failures, "wall_s": round(train_s, 1),
        "runs": [{"protocol": t.protocol.name, "setting": t.setting, "seed": t.seed, "baseline": t.baseline,
                  "folder": str(t.folder), **(t.record() if t.done else {"failed": True})} for t in every],
        "claims": [{"protocol": r.protocol, "claim": r.claim, "verdict": r.verdict.verdict,
                    "reason": r.verdict.reason, "effect": r.verdict.effect.mean, "seeds": r.seeds} for r in rows],
    }, indent=2, default=str))
    print(md.read_text())
    say(f"faircl bench: wrote {md}, {csv_path}" + (f", {png}" if png else "") + f", {out / 'bench.json'}")
    return 1 if failures else 0
