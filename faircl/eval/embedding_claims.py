"""The embedding benchmark's claims from its per-item outputs (:mod:`faircl.eval.embedding_items`): the original
encoder's bias against its null on the test items and on a held-out validation sample, and the seed-paired change
with the item bootstrap nested in the seeds (:mod:`faircl.eval.item_nulls`).

Second samples: SEAT's sentence tests are judged and the word-level WEAT tests of the same names are the validation
sample; CrowS-Pairs, StereoSet and Bias-IR have one item set each, split once (seed ``SPLIT_SEED``, Bias-IR within
each category) into a test half, on which the claim is judged, and a validation half used only for the null. CCED
has no null (see ``CCED_NULL``); its tuples are drawn anew by every seed, so the seeds' spread already holds the
tuples' sampling and the change is the paired t-test over seeds.
"""

from __future__ import annotations

import numpy as np

from faircl.eval.verdicts import BiasTest, Effect, paired_seed_comparison
from faircl.eval.item_nulls import (SeatItems, binomial_preference_null, grouped_label_null,
                                    paired_item_bootstrap, preference_deviation, seat_mean_abs_effect,
                                    seat_permutation_null, seat_units, share_deviation)

SPLIT_SEED = 20
CCED_NULL = ("not defined: a tuple's CCED |‖f(S^m) − f(S^n)‖ − ‖f(S^f) − f(S^n)‖| does not change when its two "
             "sides are swapped, so the swap null is the observation itself, and a gender-blind encoder scores "
             "exactly 0 (no sampling noise to beat); the original's CCED is {obs:.1f}")


def half_split(n: int, strata=None, seed: int = SPLIT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint test / validation halves of ``n`` items (the test half gets the odd one), within each stratum."""
    strata = np.zeros(n, dtype=int) if strata is None else np.asarray(strata)
    rng = np.random.default_rng(seed)
    test, val = [], []
    for s in sorted(set(strata.tolist())):
        idx = rng.permutation(np.flatnonzero(strata == s))
        k = (len(idx) + 1) // 2
        test += idx[:k].tolist()
        val += idx[k:].tolist()
    return np.sort(test), np.sort(val)


def _seat_tests(d: dict) -> list[SeatItems]:
    # a unit is a target word on one side (X or Y)
    return [SeatItems(t["s"], t["x"], 2 * np.asarray(t["cluster"]) + np.asarray(t["x"])) for _, t in sorted(d.items())]


def _prefs(items: dict, key: str) -> np.ndarray:
    if key == "crows":
        return (np.asarray(items["crows"]) > 0).astype(float)
    sims = np.asarray(items["stereoset"])
    return (sims[:, 0] > sims[:, 1]).astype(float)


def _ir(items: dict):
    q = items["bias_ir"]
    return (np.array([x["m"] for x in q]), np.array([x["f"] for x in q]), [[tuple(c) for c in x["cells"]] for x in q],
            np.array([x["category"] for x in q]))


def _splits(real_on, strata, n_splits: int, n: int | None = None) -> tuple[int, int]:
    """In how many of ``n_splits`` other random half-splits (seeds 1000, 1001, …) both halves are real."""
    n = len(strata) if n is None else n
    both = sum(all(real_on(i) for i in half_split(n, strata, 1000 + k)) for k in range(n_splits))
    return both, n_splits


def _values(stat, base: list, meth: list) -> tuple[float, float]:
    """The observed score of the baseline and of the method, each averaged over the seeds."""
    return (float(np.mean([stat(d, None)[0] for d in base])), float(np.mean([stat(d, None)[0] for d in meth])))


def _cced_stat(d: dict, sources: list[str], w: np.ndarray | None) -> np.ndarray:
    values = np.concatenate([np.asarray(d["cced"][s], dtype=float) for s in sources])
    return np.atleast_1d(values.mean() if w is None else w @ values / w.sum(axis=1))


def evidence(runs: list[dict], head: str, key: str, n_perm: int, n_boot: int, n_splits: int = 1000,
             tuples_shared: bool = False, heldout: tuple[str, ...] | None = None) -> dict:
    """``effect`` (:class:`Effect`), ``bias`` (BiasTests, empty for CCED), ``bias_text``, ``items`` (test / val
    counts), ``reference`` (the null on all items), ``splits`` (other half-splits with both halves real, of how
    many) and ``values`` (the baseline's and the method's mean score over seeds) of one claim; the baseline is the
    ``original`` model of every seed.

    CCED: the paired t-test over seeds when every seed draws its own tuples; with ``tuples_shared`` (every seed and
    both models scored on the same tuples, ``items["cced"]`` per source) the tuples are bootstrapped within their
    source, nested in the seeds. ``heldout``: the held-out sources (default: the original's ``heldout_sources``)."""
    base = [r["models"]["original"]["items"] for r in runs]
    meth = [r["models"][head]["items"] for r in runs]
    if key in ("cced_heldout", "cced_in"):
        b = [float(r["models"]["original"][key]) for r in runs]
        m = [float(r["models"][head][key]) for r in runs]
        out = {"bias": (), "bias_text": CCED_NULL.format(obs=100 * float(np.mean(b))), "items": None,
               "values": (float(np.mean(b)), float(np.mean(m)))}
        if not tuples_shared:
            return {**out, "effect": paired_seed_comparison(b, m)}
        held = set(heldout if heldout is not None else runs[0]["models"]["original"].get("heldout_sources", ()))
        sources = [s for s in base[0]["cced"] if (s in held) == (key == "cced_heldout")]
        strata = np.concatenate([[i] * len(base[0]["cced"][s]) for i, s in enumerate(sources)])
        effect = paired_item_bootstrap(lambda d, w: _cced_stat(d, sources, w), base, meth, strata, n_boot)
        return {**out, "effect": effect, "items": (f"{len(strata)} tuples", "—")}
    if key == "seat_mean_abs_effect_size":
        tests = _seat_tests(base[0]["seat"])

        def seat_stat(d, w):
            return seat_mean_abs_effect(_seat_tests(d["seat"]), w)

        effect = paired_item_bootstrap(seat_stat, base, meth, seat_units(tests), n_boot)
        bias = (seat_permutation_null(tests, n_perm, split="test"),
                seat_permutation_null(_seat_tests(base[0]["seat_words"]), n_perm, split="validation (word tests)"))
        n_words = sum(len(t.unit_in_x) for t in tests)
        return {"effect": effect, "bias": bias, "items": (f"{n_words} target words", "the word-level tests"),
                "values": _values(seat_stat, base, meth)}
    if key == "bias_ir_deviation":
        m0, f0, cells, cat = _ir(base[0])
        test, val = half_split(len(m0), cat)

        def stat(d, w):
            m, f, _, c = _ir(d)
            return np.atleast_1d(share_deviation(m[test], f[test], c[test], w))

        effect = paired_item_bootstrap(stat, base, meth, cat[test], n_boot)
        bias = tuple(grouped_label_null(m0[i], f0[i], [cells[j] for j in i], cat[i], n_perm, split=s)
                     for i, s in ((test, "test"), (val, "validation")))
        every = grouped_label_null(m0, f0, cells, cat, n_perm, split="all items (reference only)")

        def real_on(i):
            return grouped_label_null(m0[i], f0[i], [cells[j] for j in i], cat[i], min(n_perm, 1000),
                                      n_bootstrap=0).real

        return {"effect": effect, "bias": bias, "items": (f"{len(test)} queries", f"{len(val)} queries"),
                "reference": (every, f"{len(m0)} queries"), "splits": _splits(real_on, cat, n_splits // 10),
                "values": _values(stat, base, meth)}
    name = "crows" if key.startswith("crows") else "stereoset"
    prefs = _prefs(base[0], name)
    test, val = half_split(len(prefs))
    def pref_stat(d, w):
        return preference_deviation(_prefs(d, name)[test], w)

    effect = paired_item_bootstrap(pref_stat, base, meth, np.zeros(len(test)), n_boot)
    bias = tuple(binomial_preference_null(prefs[i], split=s) for i, s in ((test, "test"), (val, "validation")))
    unit = "pairs" if name == "crows" else "items"
    every = binomial_preference_null(prefs, split="all items (reference only)")
    splits = _splits(lambda i: binomial_preference_null(prefs[i], n_bootstrap=0).real, None, n_splits, len(prefs))
    return {"effect": effect, "bias": bias, "items": (f"{len(test)} {unit}", f"{len(val)} {unit}"),
            "reference": (every, f"{len(prefs)} {unit}"), "splits": splits, "values": _values(pref_stat, base, meth)}


def null_table(rows: list[tuple[str, dict]]) -> list[str]:
    """Markdown table of the original encoder's bias against its null, per claim and sample (values ×100)."""
    lines = ["## The original encoder's bias against its null", "",
             "Is there a bias to remove? The original all-MiniLM-L6-v2's score on each sample against the score of "
             "an encoder without the preference (the null; ×100, as the summary). *Real* = above the null's 95th "
             "percentile; a claim is testable only if it is real on the test **and** the validation sample (the "
             "rows *all items* pool the two halves, for reference only: the rule does not use them). "
             "Interval: 95% bootstrap over the sample's items (SEAT: target words; Bias-IR: queries within "
             "categories).", "",
             "| claim | sample | items | original | 95% interval | null mean | null 95% | p | real? |",
             "|---|---|---|---:|---|---:|---:|---:|---|"]
    for claim, ev in rows:
        claim = claim.replace("|", "\\|")
        if not ev["bias"]:
            text = ev["bias_text"].replace("|", "\\|")
            lines.append(f"| {claim} | — | — | — | — | — | — | — | — | {text} |")
            continue
        pairs = list(zip(ev["bias"], ev["items"])) + ([ev["reference"]] if ev.get("reference") else [])
        for t, n in pairs:
            ci = "—" if not np.isfinite(t.lo) else f"[{100 * t.lo:.1f}, {100 * t.hi:.1f}]"
            lines.append(f"| {claim} | {t.split} | {n} | {100 * t.observed:.1f} | {ci} | {100 * t.null_mean:.1f} | "
                         f"{100 * t.null_q95:.1f} | {t.p_value:.3g} | {'yes' if t.real else '**no**'} |")
    split_notes = [f"{claim.split(' (')[0]}: {b} of {k}" for claim, ev in rows if ev.get("splits")
                   for b, k in [ev["splits"]]]
    if split_notes:
        lines += ["", "Does the verdict hang on the one split of the items into halves? Other random half-splits "
                  f"(seeds 1000, 1001, …) in which both halves exceed their null: {'; '.join(split_notes)}."]
    return lines + [""]


__all__ = ["BiasTest", "CCED_NULL", "Effect", "SPLIT_SEED", "evidence", "half_split", "null_table"]
