"""Protocols as data: a protocol is a versioned YAML file under ``faircl/bench/protocols/<suite>/``.

A protocol fixes everything a claim depends on except the method: the data and its splits (a datamodule and its
arguments), the encoder every method trains (``model``: the arguments given to the method under test and to the
baselines alike), the budget and batch (``trainer``, ``data.init_args.batch_size``), the selection rule (the
checkpoint a run is judged on: ``selection``), the baselines, and the claims with each paper's effect. Example::

    name: synthbios
    version: 1
    title: SynthBios, profession from a template biography, gender stereotyped in train
    paper: Shen et al. (2021), Sec. 4
    input_kind: tokens          # what the datamodule's x holds; a method that cannot read it is skipped
    views: true                 # the datamodule can draw two augmented views (methods with requires_views)
    data: {class_path: SynthBios, init_args: {bias: 0.8, representation: tokens, batch_size: 64}}
    model: {encoder: bow, encoder_kwargs: {embed_dim: 64, hidden_dim: 128}, lr: 0.003}
    trainer: {max_epochs: 8}
    selection: {monitor: val/accuracy, mode: max}   # or {rule: gap_within} (Shen's), {rule: last}
    seeds: 5
    baselines: {CE: {class_path: CE}}
    claims:
      - {gap: tpr_gap_rms, baseline: CE, paper_effect: null}
    quick: {data: {init_args: {n_train: 600}}, trainer: {max_epochs: 2}, seeds: 2}

``extends: <name>`` starts from another protocol of the suite and deep-merges this file over it (a control is its
main protocol with ``data.init_args.permute_attribute: true`` and ``control: true``); ``selection`` and
``baselines``, where the file gives them, replace the parent's whole. ``requires_data: <folder>``
names the data set folder under ``$FAIRCL_DATA``; without it the protocol is skipped with that reason.
``applies_to: [<class name>, ...]`` keeps a protocol to those methods and their subclasses (a grid of one method's
own settings against one of them, e.g. TwoStageCL against λ = 0); any other method is skipped with that reason.
``on_request: true`` makes a protocol run only where ``--protocol`` names it (a second selection rule over the same
runs' design, e.g. the ``_dto`` variants): a suite's plain invocation leaves it out and says how many it left out.
It is not inherited: a file that ``extends`` such a protocol is on request only if it says so.
A protocol of the ``embeddings`` suite trains an encoder on counterfactual tuples, has an ``evaluate`` block (subset
sizes of the embedding bias sets, :data:`EVALUATE_DEFAULTS`) and claims that name an item-level ``score``
(:data:`ITEM_SCORES`) instead of a ``gap``: :mod:`faircl.bench.embeddings`.
A claim on a ``statistic`` names a scalar of the test report that involves no attribute (Martin & Ogbuokiri's
``cluster_dominance``: the largest K-means cluster's share of the test embeddings): it is decided from the runs'
values paired by seed (a t-test over seeds, in the same Holm family), with no attribute null, because there is no
group to permute.
``--quick`` merges the ``quick`` block over the protocol. The cache key of a baseline run is the hash of the resolved
protocol (:meth:`Protocol.key`): editing a protocol (or bumping its ``version``) retrains its baselines, nothing
else does.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from faircl.bench.checkpoint_selection import check_selection
from faircl.cli.config_files import CLIError
from faircl.data.locations import DATA_ENV, default_data_dir

__all__ = ["Claim", "Protocol", "SUITES", "deep_merge", "load_suite", "suite_names"]

#: the shipped suites, in ``faircl bench --list`` order
SUITES = ("text", "vision", "embeddings")
_KEYS = {"name", "version", "title", "paper", "input_kind", "views", "data", "model", "trainer", "selection", "seeds",
         "baselines", "claims", "quick", "extends", "requires_data", "control", "notes", "applies_to", "evaluate",
         "on_request"}
#: keys an ``extends`` file replaces whole instead of merging into its parent's
_REPLACED = ("selection", "baselines")
_CLAIM_KEYS = {"gap", "score", "statistic", "baseline", "paper_effect", "utility", "leakage", "leakage_paper_effect",
               "margin"}
#: the item-level scores an ``embeddings`` claim may name (:data:`faircl.bench.embeddings.SCORES`; kept here so that
#: ``--list`` and the checks of a protocol file import no torch)
ITEM_SCORES = ("cced_heldout", "cced_in", "seat", "bias_ir", "crows", "stereoset")
#: the ``evaluate`` block of an ``embeddings`` protocol: subset sizes of the bias sets (``None`` = all items), the
#: Bias-in-Bios biographies per profession of the utility probe, the encoding batch
EVALUATE_DEFAULTS: dict[str, Any] = {"seat_max": None, "crows_max": None, "stereoset_max": None,
                                     "bias_ir_queries": None, "utility_per_class": 10, "batch_size": 64}


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` merged into a copy of ``base``: nested mappings merge, anything else is replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


@dataclass(frozen=True)
class Claim:
    """"The method lowers ``gap`` against ``baseline`` at little ``utility`` cost" (and, with ``leakage``, lowers
    the leakage probe's accuracy); ``paper_effect``: the change the paper reports (fraction, negative = reduction).
    An ``embeddings`` claim names an item-level ``score`` (:data:`ITEM_SCORES`) instead of a ``gap``; a
    ``statistic`` claim a scalar of the test report that involves no attribute (``cluster_dominance``). ``gap``
    holds the name in all three cases."""

    gap: str
    baseline: str
    score: str = ""
    statistic: str = ""
    paper_effect: float | None = None
    utility: str = "accuracy"
    leakage: bool = False
    leakage_paper_effect: float | None = None
    margin: float = 0.02


@dataclass
class Protocol:
    """One resolved protocol (after ``extends`` and, in quick mode, ``quick``)."""

    name: str
    suite: str
    version: int
    title: str
    input_kind: str
    data: dict[str, Any]
    model: dict[str, Any]
    trainer: dict[str, Any]
    selection: dict[str, Any]
    seeds: int
    baselines: dict[str, dict[str, Any]]
    claims: list[Claim]
    paper: str = ""
    views: bool = False
    requires_data: str | None = None
    control: bool = False
    notes: str = ""
    applies_to: tuple[str, ...] = ()
    evaluate: dict[str, Any] = field(default_factory=dict)
    on_request: bool = False
    quick: bool = False
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def key(self) -> str:
        """Hash of everything a run's result depends on but the method and the seed (12 hex digits)."""
        body = {k: self.raw.get(k) for k in ("version", "data", "model", "trainer", "selection", "views")}
        if self.raw.get("evaluate"):  # only where given: the keys of the other suites' baselines stay as they were
            body["evaluate"] = self.raw["evaluate"]
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def missing_data(self) -> str | None:
        """Why the protocol cannot run here (its data set folder is not found), else ``None``."""
        if not self.requires_data or self.data.get("init_args", {}).get("data_dir"):
            return None
        where = default_data_dir(None, self.requires_data)
        if where is None:
            return f"needs the {self.requires_data}/ data set: set {DATA_ENV} to the folder that holds it"
        if not where.exists():
            return f"needs the {self.requires_data}/ data set: {where} does not exist ({DATA_ENV})"
        return None

    def skip_reason(self, method: type) -> str | None:
        """Why ``method`` (a :class:`~faircl.methods.base.FairModule` subclass) does not run on this protocol."""
        if self.applies_to and not any(c.__name__ in self.applies_to for c in method.__mro__):
            return (f"this protocol judges {', '.join(self.applies_to)} (and subclasses) against "
                    f"{', '.join(self.baselines)}; {method.__name__} is not one")
        kinds = tuple(getattr(method, "input_kinds", ()))
        if kinds and self.input_kind not in kinds:
            return (f"{method.__name__} trains on {', '.join(kinds)} inputs; this protocol's inputs are "
                    f"{self.input_kind}")
        if getattr(method, "requires_views", False) and not self.views:
            return f"{method.__name__} needs two augmented views; this protocol's data draws none"
        return self.missing_data()


def _protocol_dir() -> Path:
    return Path(str(resources.files("faircl.bench") / "protocols"))


def suite_names() -> list[str]:
    """The shipped suites that hold at least one protocol."""
    root = _protocol_dir()
    return [s for s in SUITES if (root / s).is_dir() and any((root / s).glob("*.yaml"))]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise CLIError(f"bench: {path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise CLIError(f"bench: {path} must hold a mapping (a protocol), not {type(data).__name__}")
    unknown = set(data) - _KEYS
    if unknown:
        raise CLIError(f"bench: {path}: unknown key(s) {sorted(unknown)}; a protocol has {sorted(_KEYS)}")
    return data


def _resolve(name: str, files: dict[str, Path], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    if name in seen:
        raise CLIError(f"bench: protocols extend each other in a cycle: {' -> '.join([*seen, name])}")
    data = _read(files[name])
    parent = data.get("extends")
    if parent is None:
        return data
    if parent not in files:
        raise CLIError(f"bench: {files[name]}: extends {parent!r}, which is not a protocol of the suite "
                       f"({', '.join(sorted(files))})")
    base = {k: v for k, v in _resolve(parent, files, (*seen, name)).items()
            if k not in ("control", "notes", "name", "on_request")}
    merged = deep_merge(base, {k: v for k, v in data.items() if k != "extends"})
    for key in _REPLACED:  # a rule or a set of baselines is given whole: merging two would mix them
        if key in data:
            merged[key] = copy.deepcopy(data[key])
    return merged


def _claims(path: Path, items: Any, baselines: dict[str, Any]) -> list[Claim]:
    if not isinstance(items, list) or not items:
        raise CLIError(f"bench: {path}: 'claims' must be a non-empty list of {{gap, baseline, ...}}")
    out = []
    for i, c in enumerate(items):
        if not isinstance(c, dict) or sum(k in c for k in ("gap", "score", "statistic")) != 1 or "baseline" not in c:
            raise CLIError(f"bench: {path}: claims[{i}] needs 'baseline' and one of 'gap' (a metric of the rows), "
                           f"'score' (an item-level score of the embeddings suite) or 'statistic' (a scalar of the "
                           f"test report with no attribute, e.g. cluster_dominance), got {c!r}")
        unknown = set(c) - _CLAIM_KEYS
        if unknown:
            raise CLIError(f"bench: {path}: claims[{i}]: unknown key(s) {sorted(unknown)} (known: "
                           f"{sorted(_CLAIM_KEYS)})")
        if c["baseline"] not in baselines:
            raise CLIError(f"bench: {path}: claims[{i}] names baseline {c['baseline']!r}, not one of "
                           f"{sorted(baselines)}")
        if "score" in c:
            if c["score"] not in ITEM_SCORES:
                raise CLIError(f"bench: {path}: claims[{i}]: score {c['score']!r} is not one of {list(ITEM_SCORES)}")
            c = {**c, "gap": c["score"]}
        if "statistic" in c:
            if not isinstance(c["statistic"], str) or not c["statistic"].isidentifier():
                raise CLIError(f"bench: {path}: claims[{i}]: statistic must name a scalar of the test report "
                               f"(e.g. cluster_dominance), got {c['statistic']!r}")
            c = {**c, "gap": c["statistic"]}
        out.append(Claim(**c))
    return out


def _names(path: Path, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise CLIError(f"bench: {path}: 'applies_to' must be a method class name or a list of them, got {value!r}")
    return tuple(value)


def _flag(path: Path, raw: dict[str, Any], key: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise CLIError(f"bench: {path}: {key!r} must be true or false, got {value!r}")
    return value


def _evaluate(path: Path, raw: dict[str, Any]) -> dict[str, Any]:
    block = raw.get("evaluate")
    scores = [c.get("score") for c in raw.get("claims") or [] if isinstance(c, dict) and c.get("score")]
    if scores and block is None:
        raise CLIError(f"bench: {path}: claims on {scores} need an 'evaluate' block (the bias sets' subset sizes; "
                       "{} for all items)")
    if block is None:
        return {}
    if not isinstance(block, dict) or set(block) - set(EVALUATE_DEFAULTS):
        raise CLIError(f"bench: {path}: 'evaluate' must be a mapping of {sorted(EVALUATE_DEFAULTS)}, got {block!r}")
    return {**EVALUATE_DEFAULTS, **block}


def _protocol(name: str, suite: str, files: dict[str, Path], quick: bool) -> Protocol:
    path = files[name]
    raw = _resolve(name, files)
    if raw.get("name", name) != name:
        raise CLIError(f"bench: {path} says name: {raw['name']!r}; a protocol's name is its file name ({name!r})")
    if quick and isinstance(raw.get("quick"), dict):
        raw = deep_merge(raw, raw["quick"])
    raw.pop("quick", None)
    for key in ("version", "data", "model", "trainer", "baselines", "claims", "input_kind"):
        if key not in raw:
            raise CLIError(f"bench: {path} has no {key!r} (a protocol needs version, input_kind, data, model, "
                           "trainer, baselines and claims)")
    if not isinstance(raw["data"], dict) or "class_path" not in raw["data"]:
        raise CLIError(f"bench: {path}: 'data' must be {{class_path: <datamodule>, init_args: {{...}}}}")
    baselines = raw["baselines"]
    if not isinstance(baselines, dict) or not baselines:
        raise CLIError(f"bench: {path}: 'baselines' must map names to {{class_path: <method>, init_args: ...}}")
    return Protocol(
        name=name, suite=suite, version=int(raw["version"]), title=str(raw.get("title", name)),
        input_kind=str(raw["input_kind"]), data=raw["data"], model=dict(raw["model"] or {}),
        trainer=dict(raw["trainer"] or {}), selection=check_selection(dict(raw.get("selection") or {}), str(path)),
        seeds=int(raw.get("seeds", 3)), baselines=baselines, claims=_claims(path, raw["claims"], baselines),
        paper=str(raw.get("paper", "")), views=bool(raw.get("views", False)), requires_data=raw.get("requires_data"),
        control=bool(raw.get("control", False)), notes=str(raw.get("notes", "")).strip(),
        applies_to=_names(path, raw.get("applies_to")), evaluate=_evaluate(path, raw),
        on_request=_flag(path, raw, "on_request"), quick=quick,
        source=str(path), raw=raw)


def load_suite(suite: str, quick: bool = False) -> list[Protocol]:
    """The protocols of a shipped suite (``text``, ``vision``, ``embeddings``) or of a folder of protocol files,
    resolved (``extends``; ``quick`` merged over each when ``quick``), in file-name order."""
    folder = Path(suite)
    if not (folder.is_dir() and any(folder.glob("*.yaml"))):
        folder = _protocol_dir() / suite
        if not folder.is_dir():
            raise CLIError(f"bench: no suite {suite!r}; the suites are {', '.join(suite_names())} (faircl bench "
                           "--list), or give a folder of protocol .yaml files")
    files = {p.stem: p for p in sorted(folder.glob("*.yaml"))}
    name = folder.name
    return [_protocol(n, name, files, quick) for n in files]
