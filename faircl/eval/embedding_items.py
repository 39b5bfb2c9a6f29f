"""Per-item outputs of the embedding benchmark (``faircl bench embeddings``,
``benchmarks/reproduction/embedding_bench.py``), saved for every model and seed so that the original encoder's bias
can be compared with a null and the changes bootstrapped over items.

* CrowS-Pairs: per pair, ``cos(more, shared) − cos(less, shared)`` (> 0: the more stereotyping sentence is preferred).
* StereoSet: per item, the cosine of the stereotype, anti-stereotype and unrelated completion to the context.
* SEAT (sentence tests, and the word-level tests of the same names as a second sample): per target sentence its
  association ``s(w, A, B)``, whether it is in X, and the target *word* it was made from (the exchangeable unit).
* Bias-IR: per query, the male / female documents of its top k and, per document of the top k, the group of the
  three wordings (male, female, neutral) of that document, as ``[labels of the group, how many are in the top k]``.
* CCED (added by the benchmark): the per-tuple distance on every test tuple.

Embeddings are cached per model (:class:`CachedEmbed`), so these outputs cost no encoding beyond the summary run.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from faircl.eval import embedding_bias as eb
from faircl.eval.bias_datasets import (SEAT_GENDER_TESTS, SeatTest, load_crows_pairs, load_grep_bias_ir, load_seat,
                                       load_stereoset_intrasentence)

# template words of the SEAT sentences ("This is John.", "The men are here."): the rest names the target word
_TEMPLATE = {"this", "that", "these", "those", "there", "here", "is", "are", "the", "a", "an", "it", "they", "thing",
             "things", "people", "person", "one", "ones", "s", "name"}
_IRREGULAR = {"men": "man", "women": "woman", "children": "child"}


class CachedEmbed:
    """Wraps ``embed`` (``list[str] → [N, d]``) so that every distinct sentence is encoded once."""

    def __init__(self, embed) -> None:
        self.embed, self.cache = embed, {}

    def __call__(self, texts) -> torch.Tensor:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.embed(missing).float()):
                self.cache[t] = v
        if not texts:
            return torch.zeros(0, 1)
        return torch.stack([self.cache[t] for t in texts])


def _forms(word: str) -> set[str]:
    w = word.lower()
    out = {w, w + "s", w + "es", w.replace("man", "men")}
    if w.endswith("y"):
        out.add(w[:-1] + "ies")
    if len(w) > 4 and w.endswith("s"):  # "equations" → "an equation"
        out.add(w[:-1])
    return out


def word_key(sentence: str, words: list[str] = ()) -> str:
    """The target word a SEAT template sentence was made from: the one word of ``words`` (the word-level test's
    list) whose form (plural, -ies, men) is in the sentence, else the sentence without its template words."""
    tokens = set(re.findall(r"[a-z]+", sentence.lower()))
    hits = [w for w in words if _forms(w) & tokens]
    if len(hits) == 1:
        return hits[0].lower()
    rest = [_IRREGULAR.get(w, w) for w in re.findall(r"[a-z]+", sentence.lower()) if w not in _TEMPLATE]
    return " ".join(rest) or sentence.lower()


def _seat_test(data_dir: Path, name: str, cap: int | None) -> SeatTest:
    t = load_seat(data_dir / "seat" / f"{name}.jsonl")
    if cap:
        t = SeatTest(t.name, t.targ1[:cap], t.targ2[:cap], t.attr1[:cap], t.attr2[:cap], t.categories)
    return t


def seat_items(embed, test: SeatTest, words: bool = False, word_list: list[str] = ()) -> dict:
    """Per target item of one SEAT test: association ``s``, ``x`` (1 in X), ``cluster`` (the target word's id;
    ``words``: every item is a word of its own; else found from ``word_list``, see :func:`word_key`)."""
    sets = [test.targ1, test.targ2, test.attr1, test.attr2]
    h = embed([s for part in sets for s in part]).float()
    x, y, a, b = torch.split(h, [len(p) for p in sets])
    s = torch.cat([eb.weat_association(x, a, b), eb.weat_association(y, a, b)]).tolist()
    keys = [t.lower() if words else word_key(t, word_list) for t in test.targ1 + test.targ2]
    ids = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return {"s": s, "x": [1] * len(test.targ1) + [0] * len(test.targ2), "cluster": [ids[k] for k in keys]}


def bias_ir_items(embed, queries, k: int = 10) -> list[dict]:
    """Per query (categories in sorted order, as :func:`faircl.eval.embedding_bias.bias_ir`): its top-``k`` male and
    female counts and, per wording group met in the top k, the group's labels and how many of them are there."""
    by_cat: dict[str, list] = {}
    for q in queries:
        by_cat.setdefault(q.category, []).append(q)
    out = []
    for cat, qs in sorted(by_cat.items()):
        docs = [d for q in qs for d in q.documents]
        genders = np.array([g for q in qs for g in q.genders])
        groups = [f"{i}/{r}" for i, q in enumerate(qs) for r in q.relevant]
        members: dict[str, str] = {}
        for g, lab in zip(groups, genders):
            members[g] = members.get(g, "") + (lab if lab in ("M", "F") else "N")
        sims = eb._cos(embed([q.query for q in qs]).float(), embed(docs).float())
        for row in sims:
            top = torch.argsort(row, descending=True)[:k].numpy()
            drawn: dict[str, int] = {}
            for j in top:
                drawn[groups[j]] = drawn.get(groups[j], 0) + 1
            out.append({"category": cat, "m": int((genders[top] == "M").sum()), "f": int((genders[top] == "F").sum()),
                        "cells": [[members[g], c] for g, c in drawn.items()]})
    return out


def item_outputs(embed, data_dir: Path, *, seat_max: int | None = None, crows_max: int | None = None,
                 stereoset_max: int | None = None, bias_ir_queries: int | None = None, bias_ir_k: int = 10) -> dict:
    """Every per-item output of one model on the benchmark subsets that ``evaluate_all`` uses with these arguments."""
    out: dict = {}
    crows = load_crows_pairs(data_dir / "crows_pairs" / "crows_pairs_anonymized.csv")[:crows_max]
    h = embed([s for p in crows for s in (p.more, p.less, eb._shared_words(p.more, p.less))]).float()
    h = F.normalize(h.reshape(len(crows), 3, -1), dim=-1)
    out["crows"] = ((h[:, 0] * h[:, 2]).sum(-1) - (h[:, 1] * h[:, 2]).sum(-1)).tolist()
    items = load_stereoset_intrasentence(data_dir / "stereoset" / "test.jsonl")[:stereoset_max]
    ctx = [re.sub(r"\s+", " ", it.context.replace("BLANK", "")).strip() for it in items]
    h = embed([s for it, c in zip(items, ctx) for s in (it.stereotype, it.anti_stereotype, it.unrelated, c)])
    h = F.normalize(h.float().reshape(len(items), 4, -1), dim=-1)
    out["stereoset"] = (h[:, :3] * h[:, 3:4]).sum(-1).tolist()
    out["seat"], out["seat_words"] = {}, {}
    for n in SEAT_GENDER_TESTS:
        word_name = n.removeprefix("sent-")
        words = _seat_test(data_dir, word_name, None) if (data_dir / "seat" / f"{word_name}.jsonl").is_file() else None
        word_list = words.targ1 + words.targ2 if words else []
        out["seat"][n] = seat_items(embed, _seat_test(data_dir, n, seat_max), word_list=word_list)
        if words and words.name != n:
            out["seat_words"][words.name] = seat_items(embed, words, words=True)
    queries = load_grep_bias_ir(data_dir / "grep_bias_ir")
    if bias_ir_queries:
        by_cat: dict[str, list] = {}
        for q in queries:
            by_cat.setdefault(q.category, []).append(q)
        queries = [q for qs in by_cat.values() for q in qs[:max(1, bias_ir_queries // len(by_cat))]]
    out["bias_ir"] = bias_ir_items(embed, queries, bias_ir_k)
    return out


def check_against_summary(items: dict, summary: dict) -> list[str]:
    """Differences between the aggregates of the per-item outputs and ``evaluate_all``'s numbers (empty = none)."""
    got = {"crows_pairs_embedding_stereo_score": 100 * float(np.mean(np.asarray(items["crows"]) > 0)),
           "stereoset_embedding_ss": 100 * float(np.mean([s[0] > s[1] for s in items["stereoset"]]))}
    for name, t in items["seat"].items():
        s, x = np.asarray(t["s"]), np.asarray(t["x"], dtype=bool)
        got[f"seat/{name}/effect_size"] = float((s[x].mean() - s[~x].mean()) / s.std(ddof=1))
    return [f"{k}: items {v:.6f} vs summary {summary[k]:.6f}" for k, v in got.items()
            if k in summary and abs(v - summary[k]) > 1e-6]
