"""Embedding-bias evaluation of a text encoder (CCD paper §4: CCED, SEAT, CrowS-Pairs, StereoSet, Bias-IR, utility).

Every measure takes ``embed``, a function ``list[str] → Tensor [N, d]`` (see :class:`TextEmbedder`, which loads any
local Hugging Face / sentence-transformers directory), so in-memory models (a trained :class:`~faircl.methods.ccd.CCD`
via ``lambda t: ccd.embed(t)``) are evaluated the same way. One command evaluates a directory::

    python -m faircl.eval.embedding_bias --model-dir path/to/encoder [--data-dir ../shared/data] [--out DIR]

Measures (lower-is-better gaps are marked in the report):

* ``cced``: mean over tuples of ``|‖f(S^{a_i}) − f(S^n)‖ − ‖f(S^{a_j}) − f(S^n)‖|``
  (:func:`faircl.metrics.embedding.cced`).
* SEAT / WEAT (Caliskan et al. 2017; May et al. 2019): effect size
  ``d = (mean_{x∈X} s(x,A,B) − mean_{y∈Y} s(y,A,B)) / std_{w∈X∪Y} s(w,A,B)`` with
  ``s(w,A,B) = mean_{a∈A} cos(w,a) − mean_{b∈B} cos(w,b)`` (sample std, ddof = 1, as sent-bias), and the one-sided
  permutation p-value ``P[s(X_i,Y_i,A,B) > s(X,Y,A,B)]`` over equal-size re-partitions of ``X ∪ Y`` (exact when
  there are at most ``n_permutations`` partitions, sampled otherwise).
* Bias-IR (Grep-BiasIR): each query ranks the documents of its category by cosine similarity; the male ratio of the
  top-k is ``#M / (#M + #F)`` (neutral and ``BOTH`` documents do not count); per category its mean over queries;
  ``bias_ir_deviation`` is the mean over categories of ``|ratio − 0.5|`` (0 = fair).
* CrowS-Pairs / StereoSet intrasentence with a masked-LM head: pseudo-log-likelihood scores (Nangia et al. 2020:
  mask each token shared by both sentences in turn; StereoSet: mask each token of the filled-in word in turn and
  average). ``crows_pairs_mlm_stereo_score`` = % pairs where the more stereotyping sentence is likelier (50 = fair);
  ``stereoset_mlm_ss`` / ``_lms`` / ``_icat`` as Nadeem et al. 2021.
* Without an MLM head (sentence encoders such as MiniLM) the **embedding-similarity variants** are reported under
  their own names: ``crows_pairs_embedding_stereo_score`` = % pairs whose more stereotyping sentence is closer (cosine)
  to the words both sentences share; ``stereoset_embedding_ss`` / ``_lms`` / ``_icat`` score each completed sentence
  by its cosine similarity to the context sentence (``BLANK`` removed). They are not comparable to the MLM numbers.
* Utility probe: a logistic-regression classifier on frozen embeddings (stratified k-fold accuracy), e.g. the
  profession of Bias-in-Bios biographies.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from faircl._checks import check_same_length
from faircl.data.counterfactual import CDA, AttributeLexicon, make_cda_tuples, read_texts, read_tuple_file
from faircl.eval.report import print_report, write_report
from faircl.eval.text_encoder import TextEmbedder
from faircl.eval.text_encoder import save_random_bert as save_random_bert  # re-exported: eb.save_random_bert
from faircl.metrics.embedding import cced
from faircl.metrics.probes import cross_val_probe
from faircl.eval.bias_datasets import (
    SEAT_GENDER_TESTS,
    BiasIRQuery,
    CrowsPair,
    SeatTest,
    StereoSetItem,
    load_crows_pairs,
    load_grep_bias_ir,
    load_seat,
    load_stereoset_intrasentence,
)

Embed = Callable[[list[str]], torch.Tensor]


# ------------------------------------------------------------------------------------------------ CCED
def cced_score(embed: Embed, tuples: Sequence[Sequence[str]]) -> float:
    """CCED gap of ``tuples`` ``(S^{a_1}, …, S^{a_G}, S^n)`` (mean over tuples; 0 = content-conditionally fair)."""
    if not tuples:
        raise ValueError("cced_score needs at least one tuple")
    k = len(tuples[0])
    flat = [s for t in tuples for s in t]
    h = embed(flat).float().reshape(len(tuples), k, -1)
    return float(cced(h[:, :-1], h[:, -1]).mean())


# ------------------------------------------------------------------------------------------------ SEAT / WEAT
def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.normalize(a.double(), dim=-1) @ F.normalize(b.double(), dim=-1).T


def weat_association(w: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``s(w, A, B) = mean_a cos(w, a) − mean_b cos(w, b)`` for every row of ``w`` ``[N, d]`` → ``[N]``."""
    return _cos(w, a).mean(1) - _cos(w, b).mean(1)


def weat_effect_size(x: torch.Tensor, y: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    """WEAT effect size (Caliskan et al. 2017, eq. in §"WEAT"): see the module docstring. NaN if ``std = 0``."""
    sx, sy = weat_association(x, a, b), weat_association(y, a, b)
    std = torch.cat([sx, sy]).std(unbiased=True)
    return float((sx.mean() - sy.mean()) / std) if std > 0 else float("nan")


def weat_p_value(x: torch.Tensor, y: torch.Tensor, a: torch.Tensor, b: torch.Tensor, n_permutations: int = 10000,
                 seed: int = 0) -> float:
    """One-sided permutation p-value of ``s(X, Y, A, B) = Σ_x s(x) − Σ_y s(y)`` over re-partitions of ``X ∪ Y``."""
    s = torch.cat([weat_association(x, a, b), weat_association(y, a, b)]).numpy()
    nx, n = len(x), len(x) + len(y)
    total = s.sum()
    observed = 2 * s[:nx].sum() - total  # Σ_X s − Σ_Y s
    if math.comb(n, nx) <= n_permutations:
        stats = np.array([2 * s[list(c)].sum() - total for c in itertools.combinations(range(n), nx)])
    else:
        rng = np.random.default_rng(seed)
        idx = np.argsort(rng.random((n_permutations, n)), axis=1)[:, :nx]
        stats = 2 * s[idx].sum(1) - total
    return float((stats > observed + 1e-12).mean())


def seat(embed: Embed, test: SeatTest, n_permutations: int = 10000, seed: int = 0) -> dict[str, float]:
    """Effect size and p-value of one SEAT test."""
    sets = [test.targ1, test.targ2, test.attr1, test.attr2]
    h = embed([s for part in sets for s in part]).float()
    parts = torch.split(h, [len(p) for p in sets])
    return {"effect_size": weat_effect_size(*parts), "p_value": weat_p_value(*parts, n_permutations, seed)}


def seat_suite(embed: Embed, seat_dir: str | Path, tests: Sequence[str] = SEAT_GENDER_TESTS,
               n_permutations: int = 10000, max_examples: int | None = None) -> dict[str, float]:
    """Several SEAT tests from ``seat_dir`` (``<name>.jsonl``); adds the mean absolute effect size."""
    out: dict[str, float] = {}
    for name in tests:
        t = load_seat(Path(seat_dir) / f"{name}.jsonl")
        if max_examples:
            t = SeatTest(t.name, t.targ1[:max_examples], t.targ2[:max_examples], t.attr1[:max_examples],
                         t.attr2[:max_examples], t.categories)
        r = seat(embed, t, n_permutations)
        out[f"seat/{name}/effect_size"] = r["effect_size"]
        out[f"seat/{name}/p_value"] = r["p_value"]
    effects = [abs(v) for k, v in out.items() if k.endswith("effect_size") and not math.isnan(v)]
    out["seat_mean_abs_effect_size"] = float(np.mean(effects)) if effects else float("nan")
    return out


# ------------------------------------------------------------------------------------------------ Bias-IR
def bias_ir(embed: Embed, queries: Sequence[BiasIRQuery], k: int = 10) -> dict[str, float]:
    """Male ratio of the top-``k`` documents per category and the mean deviation from 0.5 (see module docstring)."""
    by_cat: dict[str, list[BiasIRQuery]] = {}
    for q in queries:
        by_cat.setdefault(q.category, []).append(q)
    out: dict[str, float] = {}
    deviations = []
    for cat, qs in sorted(by_cat.items()):
        docs = [d for q in qs for d in q.documents]
        genders = np.array([g for q in qs for g in q.genders])
        hd = embed(docs).float()
        hq = embed([q.query for q in qs]).float()
        sims = _cos(hq, hd)
        ratios = []
        for row in sims:
            top = torch.argsort(row, descending=True)[:k].numpy()
            m, f = int((genders[top] == "M").sum()), int((genders[top] == "F").sum())
            if m + f:
                ratios.append(m / (m + f))
        ratio = float(np.mean(ratios)) if ratios else float("nan")
        out[f"bias_ir/{cat}/male_ratio"] = ratio
        if not math.isnan(ratio):
            deviations.append(abs(ratio - 0.5))
    out["bias_ir_male_ratio"] = float(np.mean([v for kk, v in out.items() if not math.isnan(v)])) if out else math.nan
    out["bias_ir_deviation"] = float(np.mean(deviations)) if deviations else float("nan")
    return out


# ------------------------------------------------------------------------------------------------ MLM scores
@torch.no_grad()
def masked_log_likelihood(model, tokenizer, ids: Sequence[int], positions: Sequence[int]) -> float:
    """Σ over ``positions`` of ``log P(token | sentence with that one token masked)`` (pseudo-log-likelihood)."""
    if not positions:
        return 0.0
    base = torch.tensor(ids).unsqueeze(0).repeat(len(positions), 1)
    rows = torch.arange(len(positions))
    pos = torch.tensor(list(positions))
    target = base[rows, pos].clone()
    base[rows, pos] = tokenizer.mask_token_id
    logits = model(input_ids=base, attention_mask=torch.ones_like(base)).logits.float()
    logp = logits[rows, pos].log_softmax(-1)
    return float(logp[rows, target].sum())


def _content_positions(tokenizer, ids: Sequence[int]) -> list[int]:
    special = set(tokenizer.all_special_ids)
    return [i for i, t in enumerate(ids) if t not in special]


def crows_pairs_mlm(mlm, tokenizer, pairs: Sequence[CrowsPair]) -> float:
    """% of pairs where the more stereotyping sentence has the higher PLL over the tokens both share (50 = fair)."""
    wins = 0
    for p in pairs:
        a = tokenizer(p.more)["input_ids"]
        b = tokenizer(p.less)["input_ids"]
        sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        pa, pb = [], []
        special = set(tokenizer.all_special_ids)
        for block in sm.get_matching_blocks():
            for k in range(block.size):
                if a[block.a + k] not in special:
                    pa.append(block.a + k)
                    pb.append(block.b + k)
        # As the official metric: for 'stereo' and 'antistereo' rows alike, a win is PLL(sent_more) > PLL(sent_less).
        wins += masked_log_likelihood(mlm, tokenizer, a, pa) > masked_log_likelihood(mlm, tokenizer, b, pb)
    return 100.0 * wins / len(pairs) if pairs else float("nan")


def _filled_positions(tokenizer, context: str, sentence: str) -> tuple[list[int], list[int]]:
    ids = tokenizer(sentence)["input_ids"]
    pre, _, post = context.partition("BLANK")
    n_pre = len(tokenizer(pre.strip(), add_special_tokens=False)["input_ids"]) if pre.strip() else 0
    n_post = len(tokenizer(post.strip(), add_special_tokens=False)["input_ids"]) if post.strip() else 0
    content = _content_positions(tokenizer, ids)
    filled = content[n_pre:len(content) - n_post] or content
    return ids, filled


def _ss_lms_icat(scores: Sequence[tuple[float, float, float]], prefix: str) -> dict[str, float]:
    if not scores:
        return {f"{prefix}_ss": math.nan, f"{prefix}_lms": math.nan, f"{prefix}_icat": math.nan}
    s = np.array(scores)
    ss = 100.0 * float((s[:, 0] > s[:, 1]).mean())
    lms = 100.0 * float(((s[:, 0] > s[:, 2]).astype(float) + (s[:, 1] > s[:, 2])).mean() / 2)
    return {f"{prefix}_ss": ss, f"{prefix}_lms": lms, f"{prefix}_icat": lms * min(ss, 100 - ss) / 50}


def stereoset_mlm(mlm, tokenizer, items: Sequence[StereoSetItem]) -> dict[str, float]:
    """StereoSet intrasentence SS / LMS / ICAT from the mean PLL of the filled-in word's tokens."""
    scores = []
    for it in items:
        row = []
        for sent in (it.stereotype, it.anti_stereotype, it.unrelated):
            ids, pos = _filled_positions(tokenizer, it.context, sent)
            row.append(masked_log_likelihood(mlm, tokenizer, ids, pos) / max(1, len(pos)))
        scores.append(tuple(row))
    return _ss_lms_icat(scores, "stereoset_mlm")


# ------------------------------------------------------------------------------------------------ embedding variants
def _shared_words(a: str, b: str) -> str:
    wa, wb = a.split(), b.split()
    sm = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
    return " ".join(w for blk in sm.get_matching_blocks() for w in wa[blk.a:blk.a + blk.size])


def crows_pairs_embedding(embed: Embed, pairs: Sequence[CrowsPair]) -> float:
    """Embedding-similarity variant: % pairs whose more stereotyping sentence is closer to the shared words."""
    if not pairs:
        return float("nan")
    h = embed([s for p in pairs for s in (p.more, p.less, _shared_words(p.more, p.less))]).float()
    h = F.normalize(h.reshape(len(pairs), 3, -1), dim=-1)
    more = (h[:, 0] * h[:, 2]).sum(-1)
    less = (h[:, 1] * h[:, 2]).sum(-1)
    return 100.0 * float((more > less).double().mean())


def stereoset_embedding(embed: Embed, items: Sequence[StereoSetItem]) -> dict[str, float]:
    """Embedding-similarity variant of SS / LMS / ICAT: cosine of each completion to the context (BLANK removed)."""
    if not items:
        return _ss_lms_icat([], "stereoset_embedding")
    ctx = [re.sub(r"\s+", " ", it.context.replace("BLANK", "")).strip() for it in items]
    h = embed([s for it, c in zip(items, ctx) for s in (it.stereotype, it.anti_stereotype, it.unrelated, c)])
    h = F.normalize(h.float().reshape(len(items), 4, -1), dim=-1)
    sims = (h[:, :3] * h[:, 3:4]).sum(-1)
    return _ss_lms_icat([tuple(r) for r in sims.tolist()], "stereoset_embedding")


# ------------------------------------------------------------------------------------------------ utility
def utility_probe(embed: Embed, texts: Sequence[str], labels: Sequence[Any], folds: int = 5, seed: int = 0,
                  max_iter: int = 2000) -> dict[str, float]:
    """Stratified k-fold accuracy of a logistic regression on frozen (standardised) embeddings."""
    check_same_length(texts=texts, labels=labels)
    mean, std = cross_val_probe(embed(list(texts)).float(), list(labels), "logistic", folds=folds, C=1.0, seed=seed,
                                max_iter=max_iter)
    return {"utility_accuracy": mean, "utility_accuracy_std": std}


def load_bios_probe(data_dir: str | Path, per_class: int | None = None) -> tuple[list[str], list[str]]:
    """Bias-in-Bios samples (``bias_in_bios_samples/<profession>.csv``, 10 each): texts and profession labels."""
    import csv

    texts, labels = [], []
    files = sorted(p for p in (Path(data_dir) / "bias_in_bios_samples").glob("*.csv") if "complete" not in p.name)
    if not files:
        raise FileNotFoundError(f"no Bias-in-Bios sample files in {Path(data_dir) / 'bias_in_bios_samples'}")
    for p in files:
        with p.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))[:per_class]
        texts += [r["hard_text"] for r in rows]
        labels += [r["profession"] for r in rows]
    return texts, labels


# ------------------------------------------------------------------------------------------------ all at once
def evaluate_all(embed: Embed, data_dir: str | Path, *, tuples: Sequence[Sequence[str]] | None = None,
                 embedder: TextEmbedder | None = None, seat_tests: Sequence[str] = SEAT_GENDER_TESTS,
                 n_permutations: int = 10000, seat_max_examples: int | None = None, bias_ir_k: int = 10,
                 crows_max: int | None = None, stereoset_max: int | None = None, bias_ir_max_queries: int | None = None,
                 utility: bool = True, utility_per_class: int | None = None,
                 log: Callable[[str], None] | None = None) -> dict[str, float]:
    """Every measure whose data is in ``data_dir``; MLM scores when ``embedder`` has an MLM head.

    Args:
        embed: ``list[str] → [N, d]``.
        data_dir: the folder with ``seat/``, ``grep_bias_ir/``, ``crows_pairs/``, ``stereoset/``,
            ``bias_in_bios_samples/``.
        tuples: counterfactual tuples for CCED (skipped when ``None``).
        embedder: the loaded directory (enables the masked-LM scores).
        crows_max / stereoset_max / bias_ir_max_queries: use only the first items (quick runs).
        utility_per_class: at most this many biographies per profession for the utility probe.
    """
    data_dir = Path(data_dir)
    say = log or (lambda s: None)
    report: dict[str, float] = {}
    if tuples:
        say(f"CCED on {len(tuples)} tuples")
        report["cced"] = cced_score(embed, tuples)
    if (data_dir / "seat").is_dir():
        say(f"SEAT {list(seat_tests)}")
        report.update(seat_suite(embed, data_dir / "seat", seat_tests, n_permutations, seat_max_examples))
    if (data_dir / "grep_bias_ir").is_dir():
        say("Bias-IR")
        queries = load_grep_bias_ir(data_dir / "grep_bias_ir")
        if bias_ir_max_queries:
            # Keep every category: the first queries of each.
            by_cat: dict[str, list[BiasIRQuery]] = {}
            for q in queries:
                by_cat.setdefault(q.category, []).append(q)
            queries = [q for qs in by_cat.values() for q in qs[:max(1, bias_ir_max_queries // len(by_cat))]]
        report.update(bias_ir(embed, queries, k=bias_ir_k))
    crows_file = data_dir / "crows_pairs" / "crows_pairs_anonymized.csv"
    stereo_file = data_dir / "stereoset" / "test.jsonl"
    crows = load_crows_pairs(crows_file)[:crows_max] if crows_file.is_file() else []
    stereo = load_stereoset_intrasentence(stereo_file)[:stereoset_max] if stereo_file.is_file() else []
    mlm = embedder is not None and embedder.has_mlm_head
    if crows:
        say(f"CrowS-Pairs ({len(crows)} gender pairs)")
        if mlm:
            report["crows_pairs_mlm_stereo_score"] = crows_pairs_mlm(embedder.mlm(), embedder.tokenizer, crows)
        report["crows_pairs_embedding_stereo_score"] = crows_pairs_embedding(embed, crows)
    if stereo:
        say(f"StereoSet intrasentence ({len(stereo)} gender items)")
        if mlm:
            report.update(stereoset_mlm(embedder.mlm(), embedder.tokenizer, stereo))
        report.update(stereoset_embedding(embed, stereo))
    if utility and (data_dir / "bias_in_bios_samples").is_dir():
        say("utility probe (Bias-in-Bios profession)")
        texts, labels = load_bios_probe(data_dir, per_class=utility_per_class)
        report.update(utility_probe(embed, texts, labels))
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """``python -m faircl.eval.embedding_bias --model-dir DIR``: evaluate one encoder directory, write a report."""
    import os

    parser = argparse.ArgumentParser(prog="python -m faircl.eval.embedding_bias", description=main.__doc__)
    parser.add_argument("--model-dir", default=None, help="local HF / sentence-transformers directory "
                        "(default: the offline all-MiniLM-L6-v2)")
    parser.add_argument("--data-dir", default=os.environ.get("FAIRCL_DATA", "../shared/data"))
    parser.add_argument("--tuples", default=None, help="tuple file (CSV/JSONL with male,female,neutral) for CCED; "
                        "default: CDA tuples from GAP test sentences")
    parser.add_argument("--max-tuples", type=int, default=500)
    parser.add_argument("--permutations", type=int, default=10000)
    parser.add_argument("--bias-ir-k", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="small subsets of every benchmark")
    parser.add_argument("--out", default=None, help="directory for report.json / report.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        raise SystemExit(f"data directory {str(data_dir)!r} not found (pass --data-dir or set FAIRCL_DATA)")
    embedder = TextEmbedder(args.model_dir)
    tuples = _default_tuples(data_dir, args.tuples, args.max_tuples)
    quick = dict(n_permutations=1000, seat_max_examples=16, crows_max=20, stereoset_max=20, bias_ir_max_queries=28,
                 utility_per_class=5) if args.quick else {}
    report = evaluate_all(embedder, data_dir, tuples=tuples, embedder=embedder, bias_ir_k=args.bias_ir_k,
                          log=print, **({"n_permutations": args.permutations} | quick))
    print_report(report, title=f"embedding bias — {embedder.model_dir}")
    if args.out:
        path = write_report(report, args.out, meta={"model_dir": str(embedder.model_dir), "data_dir": str(data_dir)})
        print(f"report written to {path}")
    return report


def _default_tuples(data_dir: Path, tuple_file: str | None, max_tuples: int) -> list[tuple[str, ...]]:
    if tuple_file:
        return read_tuple_file(tuple_file, ("male", "female", "neutral"))[:max_tuples]
    gap = data_dir / "gap_coreference" / "gap-test.tsv"
    if not gap.is_file() or not (data_dir / "cda_word_lists").is_dir():
        return []
    cda = CDA(AttributeLexicon.gender(data_dir, "adept+names"))
    tuples, _ = make_cda_tuples(read_texts(gap), cda, split=True)
    return tuples[:max_tuples]


if __name__ == "__main__":
    main()
