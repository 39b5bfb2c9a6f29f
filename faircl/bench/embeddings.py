"""The ``embeddings`` suite: a debiased text encoder judged by its embeddings, item by item.

A protocol of this suite trains on counterfactual tuples (:class:`~faircl.data.counterfactual.sources.SourcedTuples`)
and names an ``evaluate`` block; after a run's ``faircl test`` the runner scores the tested model's ``embed`` on

- every test tuple: its CCED, by source (in distribution: the training sources; held out: the others);
- the embedding bias sets under the data folder (SEAT, Grep-BiasIR, CrowS-Pairs and StereoSet in their
  embedding-similarity variants, the Bias-in-Bios utility probe): :func:`faircl.eval.embedding_bias.evaluate_all`
  and the per-item outputs of :func:`faircl.eval.embedding_items.item_outputs`,

and writes them to ``items.json`` in the run folder. A claim of the suite names a ``score`` instead of a ``gap``;
it is decided by :func:`faircl.eval.embedding_claims.evidence` (the item-level null of the baseline's bias, the
seed-paired change with the items' bootstrap nested in the seeds) under the same verdict rule and family as
every other claim (:func:`faircl.eval.verdicts.decide`).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from faircl.bench.spec import ITEM_SCORES
from faircl.eval import embedding_bias as eb
from faircl.eval.verdicts import ClaimEvidence, paired_seed_comparison
from faircl.eval.embedding_claims import evidence
from faircl.eval.embedding_items import CachedEmbed, check_against_summary, item_outputs
from faircl.metrics.embedding import cced

__all__ = ["SCORES", "item_claim", "score_items"]

#: a claim's ``score`` → the key of :func:`faircl.eval.embedding_claims.evidence` and what it measures
SCORES: dict[str, tuple[str, str]] = {
    "cced_heldout": ("cced_heldout", "CCED on the tuples of the held-out sources"),
    "cced_in": ("cced_in", "CCED on unseen tuples of the training sources"),
    "seat": ("seat_mean_abs_effect_size", "mean |effect size| of the gender SEAT tests"),
    "bias_ir": ("bias_ir_deviation", "Grep-BiasIR: |male share of the top 10 − 0.5|"),
    "crows": ("crows_pairs_embedding_stereo_score", "CrowS-Pairs (embedding variant): |score − 50|"),
    "stereoset": ("stereoset_embedding_ss", "StereoSet ss (embedding variant): |ss − 50|"),
}
assert tuple(SCORES) == ITEM_SCORES, "faircl.bench.spec.ITEM_SCORES names the same scores"
def _embed_fn(model: Any, batch_size: int):
    @torch.no_grad()
    def embed(texts):
        texts = list(texts)
        parts = [model.embed(texts[i:i + batch_size]).float().cpu() for i in range(0, len(texts), batch_size)]
        return torch.cat(parts) if parts else torch.zeros(0, 1)

    return embed


def _tuple_fingerprint(rows: list[tuple[str, ...]]) -> str:
    return hashlib.sha256(json.dumps([list(t) for t in rows]).encode()).hexdigest()[:16]


def score_items(model: Any, datamodule: Any, data_dir: str | Path, settings: dict[str, Any],
                n_permutations: int = 1000) -> dict[str, Any]:
    """Every score and per-item output of ``model`` (its ``embed``): CCED per test tuple by source, the bias sets'
    summary (:func:`~faircl.eval.embedding_bias.evaluate_all`) and items; what ``items.json`` holds."""
    model.eval()
    embed = CachedEmbed(_embed_fn(model, int(settings.get("batch_size", 64))))
    test = datamodule.splits["test"]
    rows, sources = list(test.x), list(datamodule.test_sources)
    heldout = set(datamodule.heldout_sources)
    per_source: dict[str, list[float]] = {}
    for s in dict.fromkeys(sources):
        tuples = [t for t, src in zip(rows, sources) if src == s]
        h = embed([x for t in tuples for x in t]).reshape(len(tuples), len(tuples[0]), -1)
        per_source[s] = [round(float(v), 7) for v in cced(h[:, :-1], h[:, -1])]

    def pooled(names):
        vals = [v for s in names for v in per_source[s]]
        return float(np.mean(vals)) if vals else math.nan

    summary = eb.evaluate_all(embed, data_dir, seat_max_examples=settings["seat_max"],
                              crows_max=settings["crows_max"], stereoset_max=settings["stereoset_max"],
                              bias_ir_max_queries=settings["bias_ir_queries"],
                              utility_per_class=settings["utility_per_class"], n_permutations=n_permutations)
    items = item_outputs(embed, Path(data_dir), seat_max=settings["seat_max"], crows_max=settings["crows_max"],
                         stereoset_max=settings["stereoset_max"], bias_ir_queries=settings["bias_ir_queries"])
    problems = check_against_summary(items, summary)
    if problems:
        raise RuntimeError("the per-item outputs disagree with the summary: " + "; ".join(problems))
    items["cced"] = per_source
    return {**{k: float(v) for k, v in summary.items() if isinstance(v, (int, float))},
            "cced_in": pooled([s for s in per_source if s not in heldout]),
            "cced_heldout": pooled([s for s in per_source if s in heldout]),
            "heldout_sources": sorted(heldout), "tuples": _tuple_fingerprint(rows),
            "n_tuples": {s: len(v) for s, v in per_source.items()},
            "sentences_encoded": len(embed.cache), "items": items}


def item_claim(name: str, score: str, baseline: list[dict], method: list[dict], paper_effect: float | None,
               n_permutations: int, n_bootstrap: int) -> tuple[ClaimEvidence, dict[str, Any]]:
    """The evidence of one ``score`` claim from the ``items.json`` of the paired baseline and method runs (same
    seeds, in order), and what the table shows beside it (the scores' means, the null's wording, item counts)."""
    key = SCORES[score][0]
    shared = len({r["tuples"] for r in baseline + method}) == 1  # one draw of tuples: bootstrap them
    runs = [{"models": {"original": b, "method": m}} for b, m in zip(baseline, method)]
    ev = evidence(runs, "method", key, n_permutations, n_bootstrap, n_splits=100, tuples_shared=shared)
    utility = paired_seed_comparison([b.get("utility_accuracy", math.nan) for b in baseline],
                                     [m.get("utility_accuracy", math.nan) for m in method])
    extra = {"values": ev.get("values", (math.nan, math.nan)), "items": ev.get("items"),
             "bias_text": ev.get("bias_text", "") if not ev["bias"] else "",
             "utility": (float(np.mean([b.get("utility_accuracy", math.nan) for b in baseline])),
                         float(np.mean([m.get("utility_accuracy", math.nan) for m in method]))),
             "what": SCORES[score][1]}
    return ClaimEvidence(name, ev["effect"], utility, paper_effect, tuple(ev["bias"])), extra

