"""Original all-MiniLM-L6-v2 vs CCD-trained MiniLM over 3 seeds: CCED on held-out *sources* and in distribution,
SEAT, Bias-IR, CrowS/StereoSet (embedding variants), a utility probe, and CCD's bandwidth ρ (median rule vs the
paper's literal "variance"). Writes ``benchmarks/results/embedding_fairness.md``.

    .venv/bin/python benchmarks/embedding_fairness.py [--data-dir ../shared/data] [--seeds 0,1,2] [--betas 1]
                                                      [--quick]

Tuples: CDA (ADEPT + CDS pairs + 1,000 CDS name pairs, ADEPT neutral words kept) over the sentences of seven real
corpora, polarity-checked, deduplicated and tagged with their source. CCD trains on tuples of the *training sources*
(Bias-in-Bios, GAP, BUG by default) and CCED is measured both on held-out tuples of those sources (in distribution)
and on tuples of sources never seen in training (RedditBias, BEC-Pro, WinoBias, WinoGender). Each seed draws the
training / validation / in-distribution test tuples, their order and the held-out-source sample; the original encoder
is scored on the same tuples as the paired baseline. Training follows the paper (Adam, lr 5e-5, one epoch, validate
every ``--val-every`` steps, keep the best) at the scale this 2-core CPU allows in about half an hour.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from _embedding_report import write_report  # noqa: E402

from faircl.data.counterfactual.sources import SOURCES, source_tuples  # noqa: E402
from faircl.eval import embedding_bias as eb  # noqa: E402
from faircl.eval.embedding_items import CachedEmbed, check_against_summary, item_outputs  # noqa: E402
from faircl.losses.ccd import ccd_bandwidth, ccd_kernel  # noqa: E402
from faircl.metrics.embedding import cced  # noqa: E402

TRAIN_SOURCES = ("bios", "gap", "bug")
HELDOUT_SOURCES = ("reddit", "bec_pro", "winobias", "winogender")
HEADLINE_BETA = 1.0


def build_tuples(data_dir: Path, names: list[str]) -> tuple[dict[str, list[tuple[str, ...]]], dict[str, str]]:
    """CDA tuples of every source (polarity-checked, deduplicated; a tuple found in an earlier source is dropped):
    :func:`faircl.data.counterfactual.sources.source_tuples`, the reports as text."""
    pools, reports = source_tuples(data_dir, names, "adept+cds+names", min_words=5, max_words=40)
    return pools, {k: str(v) for k, v in reports.items()}


def _shares(total: int, k: int) -> list[int]:
    return [total // k + (i < total % k) for i in range(k)]


def draw(pools, train_sources, heldout_sources, seed: int, n_train: int, n_val: int, n_test: int, n_out: int):
    """One seed's tuples: equal shares of every training source for train / val / in-distribution test (disjoint),
    ``n_out`` tuples of every held-out source (all of it when smaller). Returns dicts source → tuples."""
    rng = random.Random(seed)
    split = {"train": {}, "val": {}, "test_in": {}, "test_out": {}}
    k = len(train_sources)
    for s, a, b, c in zip(train_sources, _shares(n_train, k), _shares(n_val, k), _shares(n_test, k)):
        items = list(pools[s])
        if len(items) < a + b + c:
            raise SystemExit(f"source {s!r} has {len(items)} tuples, {a + b + c} needed")
        rng.shuffle(items)
        split["test_in"][s], split["val"][s], split["train"][s] = items[:c], items[c:c + b], items[c + b:c + b + a]
    for s in heldout_sources:
        split["test_out"][s] = rng.sample(pools[s], min(n_out, len(pools[s])))
    return split


def flat(parts: dict[str, list], shuffle_seed: int | None = None) -> list:
    out = [t for v in parts.values() for t in v]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(out)
    return out


# --------------------------------------------------------------------------------------------------- embeddings
def tuple_embeddings(embed, tuples) -> torch.Tensor:
    """``[N, G + 1, d]`` embeddings of tuples (versions in order, neutral last)."""
    h = embed([s for t in tuples for s in t]).float()
    return h.reshape(len(tuples), len(tuples[0]), -1)


def cced_by_source(embed, parts: dict[str, list], per_tuple: dict | None = None
                   ) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """CCED per source (mean over its tuples) and the neutral embeddings per source; ``per_tuple`` (when given)
    receives every tuple's CCED per source."""
    scores, neutral = {}, {}
    for s, tuples in parts.items():
        h = tuple_embeddings(embed, tuples)
        values = cced(h[:, :-1], h[:, -1])
        scores[s] = float(values.mean())
        neutral[s] = h[:, -1]
        if per_tuple is not None:
            per_tuple[s] = [round(float(v), 7) for v in values]
    return scores, neutral


def pooled(scores: dict[str, float], parts: dict[str, list]) -> float:
    """Mean over all tuples of the sources (weighted by their counts)."""
    n = sum(len(parts[s]) for s in scores)
    return sum(scores[s] * len(parts[s]) for s in scores) / n


@torch.no_grad()
def bandwidth_stats(embed, tuples) -> dict[str, dict[str, float]]:
    """ρ by the default median rule and by the literal variance rule on the original encoder's embeddings of the
    training tuples, with the share of float32 kernel values ``exp(−d²/(2ρ²))`` that are exactly 0 (underflow)."""
    h = tuple_embeddings(embed, tuples)
    attr, neutral = h[:, :-1].transpose(0, 1).contiguous(), h[:, -1]
    d = (attr - neutral[None]).norm(dim=-1)
    out = {}
    for how in ("median", "variance"):
        rho = ccd_bandwidth(attr, neutral, how=how)
        k = ccd_kernel(attr, neutral, rho)  # float32
        unsquared = torch.exp(-(d.float() ** 2) / rho)  # the kernel if ρ entered unsquared, for comparison
        out[how] = {"rho": rho, "zero": float((k == 0).double().mean()),
                    "zero_unsquared": float((unsquared == 0).double().mean()),
                    "tiny": float((k < 1e-20).double().mean()),
                    "median_kernel": float(k.double().median()), "dist_median": float(d.double().median()),
                    "n_tuples": len(tuples)}
    return out


def eval_sizes(data_dir: Path, args) -> dict[str, int]:
    """Sizes of the benchmark subsets that ``evaluate_all`` uses with these arguments."""
    from faircl.eval.bias_datasets import load_crows_pairs, load_grep_bias_ir, load_seat, load_stereoset_intrasentence

    cap = args.seat_max or None
    seat = sum(len(part[:cap]) for n in eb.SEAT_GENDER_TESTS for t in [load_seat(data_dir / "seat" / f"{n}.jsonl")]
               for part in (t.targ1, t.targ2, t.attr1, t.attr2))
    cats: dict[str, int] = {}
    for q in load_grep_bias_ir(data_dir / "grep_bias_ir"):
        cats[q.category] = cats.get(q.category, 0) + 1
    per_cat = max(1, args.bias_ir_queries // len(cats)) if args.bias_ir_queries else None
    return {"seat": seat, "bias_ir": sum(min(n, per_cat or n) for n in cats.values()),
            "crows": len(load_crows_pairs(data_dir / "crows_pairs" / "crows_pairs_anonymized.csv")[:args.crows_max
                                                                                                    or None]),
            "stereoset": len(load_stereoset_intrasentence(data_dir / "stereoset" / "test.jsonl")[:args.stereoset_max
                                                                                                  or None])}


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


# --------------------------------------------------------------------------------------------------- CCD training
def train_ccd(beta: float, rho: float, train, val, seed: int, args) -> tuple[object, float]:
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
                    for k, v in (("train", train), ("val", val), ("test", val))}

        def report_counts(self, splits):
            pass

    L.seed_everything(seed, verbose=False)
    dm = Tuples(batch_size=args.batch_size, seed=seed)
    model = CCD(beta=beta, rho=rho, normalize=True, lr=args.lr, encoder="hf", encoder_kwargs={"model_dir": None})
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


# --------------------------------------------------------------------------------------------------- main
def shown_command(argv: list[str]) -> str:
    """The command line that regenerates the results, without the machine-specific ``--out`` / ``--data-dir``."""
    keep, skip = [], False
    for x in argv:
        if skip:
            skip = False
        elif x in ("--out", "--data-dir"):
            skip = True
        elif not x.startswith(("--out=", "--data-dir=")):
            keep.append(x)
    return " ".join([".venv/bin/python benchmarks/embedding_fairness.py", *keep])


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.environ.get("FAIRCL_DATA", str(REPO.parent / "shared" / "data")))
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (each: tuples drawn, their order, the "
                    "held-out sample); default 0,1,2 (0,1 with --quick)")
    ap.add_argument("--train-sources", default=",".join(TRAIN_SOURCES), help=f"of {list(SOURCES)}")
    ap.add_argument("--heldout-sources", default=",".join(HELDOUT_SOURCES), help="never trained on")
    ap.add_argument("--train", type=int, default=800, help="training tuples per seed (one epoch)")
    ap.add_argument("--val", type=int, default=48, help="validation tuples (training sources)")
    ap.add_argument("--test", type=int, default=120, help="in-distribution test tuples (training sources)")
    ap.add_argument("--heldout", type=int, default=60, help="test tuples per held-out source")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--val-every", type=int, default=10, help="validate every this many steps")
    ap.add_argument("--betas", default="1", help="β values; e.g. 0,0.5,1,1.5 for the paper's Table 7 ablation")
    ap.add_argument("--rho-rows", type=int, default=1024, help="training tuples used for ρ (the library default)")
    ap.add_argument("--precision", default="32-true", help="training precision (evaluation is fp32)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--permutations", type=int, default=10000)
    ap.add_argument("--seat-max", type=int, default=0, help="examples per SEAT set (0 = all)")
    ap.add_argument("--crows-max", type=int, default=0, help="CrowS-Pairs gender pairs (0 = all)")
    ap.add_argument("--stereoset-max", type=int, default=0, help="StereoSet gender items (0 = all)")
    ap.add_argument("--bias-ir-queries", type=int, default=0, help="Bias-IR queries (0 = all)")
    ap.add_argument("--utility-per-class", type=int, default=10, help="Bias-in-Bios samples per profession")
    ap.add_argument("--quick", action="store_true", help="tiny scale smoke run (not for the report)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "embedding_fairness.md"))
    ap.add_argument("--render", metavar="JSON", help="rewrite the results file from a saved .json (no training)")
    args = ap.parse_args(argv)
    if args.quick:
        args.train, args.val, args.test, args.heldout, args.val_every = 32, 16, 12, 6, 1
        args.permutations, args.seat_max, args.crows_max, args.stereoset_max = 200, 8, 10, 10
        args.bias_ir_queries, args.utility_per_class = 14, 5
    seeds = args.seeds or ("0,1" if args.quick else "0,1,2")
    args.seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    args.beta_list = [float(b) for b in args.betas.split(",") if b.strip()]
    args.train_list = [s.strip() for s in args.train_sources.split(",") if s.strip()]
    args.heldout_list = [s.strip() for s in args.heldout_sources.split(",") if s.strip()]
    bad = [s for s in args.train_list + args.heldout_list if s not in SOURCES]
    if bad or set(args.train_list) & set(args.heldout_list):
        ap.error(f"sources must be distinct names of {list(SOURCES)}; got {args.train_list} / {args.heldout_list}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.render:
        import json
        from types import SimpleNamespace

        saved = json.loads(Path(args.render).read_text())
        saved["meta"]["args"] = SimpleNamespace(**saved["meta"]["args"])
        write_report(Path(args.out), saved["runs"], saved["meta"])
        print(f"wrote {args.out} from {args.render}")
        return
    torch.set_num_threads(args.threads)
    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise SystemExit(f"data directory {data_dir} not found (pass --data-dir or set FAIRCL_DATA)")
    start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{(time.perf_counter() - start) / 60:5.1f} min] {msg}", flush=True)

    pools, polarity = build_tuples(data_dir, args.train_list + args.heldout_list)
    log("tuples per source: " + ", ".join(f"{s} {len(v)}" for s, v in pools.items()))

    original = eb.TextEmbedder(None)
    probe_texts = [s for t in pools[args.train_list[0]][:32] for s in t][:64]
    sp = speed(original, probe_texts)
    log(f"MiniLM speed: fp32 {sp['fp32']:.0f} sentences/s, bf16 {sp['bf16']:.0f} sentences/s")
    subset = dict(seat_max_examples=args.seat_max or None, crows_max=args.crows_max or None,
                  stereoset_max=args.stereoset_max or None, bias_ir_max_queries=args.bias_ir_queries or None,
                  utility_per_class=args.utility_per_class or None, n_permutations=args.permutations)

    def benchmarks(name, embed, embedder=None):
        t0 = time.perf_counter()
        cached = CachedEmbed(embed)
        r = eb.evaluate_all(cached, data_dir, embedder=embedder, **subset)
        r["items"] = item_outputs(cached, data_dir, seat_max=args.seat_max or None, crows_max=args.crows_max or None,
                                  stereoset_max=args.stereoset_max or None,
                                  bias_ir_queries=args.bias_ir_queries or None)
        for problem in check_against_summary(r["items"], r):
            log(f"WARNING per-item outputs disagree with the summary: {problem}")
        log(f"benchmarks of {name} in {time.perf_counter() - t0:.0f}s: SEAT |d| {r['seat_mean_abs_effect_size']:.3f}"
            f", Bias-IR dev {r['bias_ir_deviation']:.3f}, utility {r['utility_accuracy']:.3f}")
        return r

    # The original encoder is deterministic: its benchmark scores are shared by every seed (same subsets).
    base_bench = benchmarks("original", original, original)
    headline = f"CCD β={HEADLINE_BETA:g}" if HEADLINE_BETA in args.beta_list else f"CCD β={args.beta_list[0]:g}"
    labels = eb.load_bios_probe(data_dir, per_class=args.utility_per_class or None)[1]
    constant_acc = max(labels.count(c) for c in set(labels)) / len(labels)
    runs = [run_seed(seed, pools, original, base_bench, benchmarks, headline, args, log) for seed in args.seed_list]

    total = time.perf_counter() - start
    meta = {"args": args, "command": shown_command(sys.argv[1:] if argv is None else list(argv)),
            "pools": {s: len(v) for s, v in pools.items()}, "polarity": polarity, "speed": sp,
            "total": total, "sources": {s: SOURCES[s][0] for s in pools}, "headline": headline,
            "constant_acc": constant_acc, "eval_sizes": eval_sizes(data_dir, args), "n_probe": len(labels),
            "n_classes": len(set(labels))}
    write_report(Path(args.out), runs, meta)
    import json

    Path(args.out).with_suffix(".json").write_text(json.dumps({"runs": runs, "meta": {**meta, "args": vars(args)}},
                                                              default=float, allow_nan=True))
    log(f"total {total / 60:.1f} min; report written to {args.out}")


def run_seed(seed: int, pools, original, base_bench, benchmarks, headline: str, args, log) -> dict:
    """One seed: draw the tuples, score the original on them, measure ρ, train and evaluate CCD for every β."""
    split = draw(pools, args.train_list, args.heldout_list, seed, args.train, args.val, args.test, args.heldout)
    train, val = flat(split["train"], shuffle_seed=seed), flat(split["val"])
    run = {"seed": seed, "counts": {k: {s: len(v) for s, v in p.items()} for k, p in split.items()},
           "models": {}, "train_info": {}}
    per_tuple: dict[str, list[float]] = {}
    in_o, _ = cced_by_source(original, split["test_in"], per_tuple)
    out_o, neutral_o = cced_by_source(original, split["test_out"], per_tuple)
    base = run["models"]["original"] = {
        **base_bench, "cced_in": pooled(in_o, split["test_in"]), "cced_heldout": pooled(out_o, split["test_out"]),
        "rep_distance": 0.0, **{f"cced/{s}": v for s, v in {**in_o, **out_o}.items()},
        "items": {**base_bench["items"], "cced": per_tuple}}
    t0 = time.perf_counter()
    bw = run["bandwidth"] = bandwidth_stats(original, train[:args.rho_rows])
    rho = bw["median"]["rho"]
    log(f"seed {seed}: {len(train)} train tuples; ρ median {rho:.4f}, variance {bw['variance']['rho']:.4f} "
        f"(kernel zeros {100 * bw['variance']['zero']:.1f}%) in {time.perf_counter() - t0:.0f}s; original CCED "
        f"in {base['cced_in']:.4f}, held-out {base['cced_heldout']:.4f}")
    for beta in args.beta_list:
        model, secs = train_ccd(beta, rho, train, val, seed, args)
        name = f"CCD β={beta:g}"
        run["train_info"][name] = (secs, float(model.rho), model.val_history, float(model.best_val_loss))
        log(f"seed {seed}: trained {name} in {secs:.0f}s (best val loss {float(model.best_val_loss):.4f})")
        if name == headline:
            # The headline model is evaluated through its exported directory, as a user would load it.
            with tempfile.TemporaryDirectory() as tmp:
                model.save_pretrained(tmp)
                exported = eb.TextEmbedder(tmp)
                res = benchmarks(f"{name} seed {seed}", exported, exported)
                res.update(_cced_fields(exported, split, neutral_o, res["items"]))
        else:
            embed = ccd_embed(model)
            res = benchmarks(f"{name} seed {seed}", embed)
            res.update(_cced_fields(embed, split, neutral_o, res["items"]))
        run["models"][name] = res
        log(f"seed {seed}: {name} CCED in {res['cced_in']:.4f}, held-out {res['cced_heldout']:.4f}")
        del model
    return run


def _cced_fields(embed, split, neutral_o, items: dict) -> dict[str, float]:
    per_tuple: dict[str, list[float]] = {}
    with torch.no_grad():
        cin, _ = cced_by_source(embed, split["test_in"], per_tuple)
        cout, neutral = cced_by_source(embed, split["test_out"], per_tuple)
    items["cced"] = per_tuple
    drift = torch.cat([(neutral[s] - neutral_o[s]).norm(dim=1) for s in neutral])
    return {"cced_in": pooled(cin, split["test_in"]), "cced_heldout": pooled(cout, split["test_out"]),
            "rep_distance": float(drift.mean()), **{f"cced/{s}": v for s, v in {**cin, **cout}.items()}}


if __name__ == "__main__":
    main()
