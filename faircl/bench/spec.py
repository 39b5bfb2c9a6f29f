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
``stage1_share: 0.6`` is the protocol's rule for a two-stage method's first stage (``round(0.6 · max_epochs)``
epochs, Chi et al.'s): the benchmark grids (``faircl/bench/grids/``) apply it to the methods they mark; it is not part
of the cache key, as it changes no baseline.
``smallest_effect: 0.02`` with ``smallest_effect_reason: "..."`` is the smallest reduction worth claiming (2 points):
a claim without a paper effect is judged against it (:attr:`faircl.eval.verdicts.ClaimEvidence.smallest_effect`),
and it bounds the band of "no change"; like ``stage1_share`` it is not part of the cache key.
``test_rows: n_test`` marks a protocol whose data can be enlarged (a synthetic set) and names the data argument that
sets its test rows: an inconclusive claim then also says how many test rows would decide it at the protocol's seeds.
A protocol of the ``embeddings`` suite trains an encoder on counterfactual tuples, has an ``evaluate`` block (subset
sizes of the embedding bias sets, :data:`EVALUATE_DEFAULTS`) and claims that name an item-level ``score``
(:data:`ITEM_SCORES`) instead of a ``gap``: :mod:`faircl.bench.embeddings`.
A claim on a ``statistic`` names a scalar of the test report that involves no attribute (Martin & Ogbuokiri's
``cluster_dominance``: the largest K-means cluster's share of the test embeddings): it is decided from the runs'
values paired by seed (a t-test over seeds, in the same family), with no attribute null, because there is no
group to permute.
``--quick`` merges the ``quick`` block over the protocol. Every file is checked whole when it is read, its quick
variant too, whatever ``--quick`` says: a bad key or value is one line naming the file and the key. A claim's ``gap``
is one the claims are decided on from the runs' rows (:data:`faircl.eval.baseline.ROW_GAPS`), its ``utility``
accuracy or balanced accuracy; ``data.class_path`` names a faircl datamodule (:data:`faircl.data.DATAMODULES`) or a
dotted path, which :mod:`faircl.bench.checks` imports and builds before any run, with the baselines. The cache
key of a baseline run is the hash of the resolved protocol (:meth:`Protocol.key`): editing a protocol (or bumping its
``version``) retrains its baselines, nothing else does.
"""

from __future__ import annotations

import copy
import hashlib
import json
import types
import typing
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Union

import yaml

from faircl.bench.checkpoint_selection import check_selection
from faircl.data import DATAMODULES
from faircl.data.locations import DATA_ENV, default_data_dir
from faircl.eval.baseline import ROW_GAPS
from faircl.eval.verdicts import GAP_METRICS
from faircl.runs.user_error import UserError

__all__ = ["Claim", "Protocol", "SUITES", "deep_merge", "file_keys", "load_suite", "suite_names"]

#: the shipped suites, in ``faircl bench --list`` order
SUITES = ("text", "vision", "embeddings")
#: keys an ``extends`` file replaces whole instead of merging into its parent's
_REPLACED = ("selection", "baselines")
#: the item-level scores an ``embeddings`` claim may name (:data:`faircl.bench.embeddings.SCORES`; kept here so that
#: ``--list`` and the checks of a protocol file import no torch)
ITEM_SCORES = ("cced_heldout", "cced_in", "seat", "bias_ir", "crows", "stereoset")
#: the ``evaluate`` block of an ``embeddings`` protocol: subset sizes of the bias sets (``None`` = all items), the
#: Bias-in-Bios biographies per profession of the utility probe, the encoding batch
EVALUATE_DEFAULTS: dict[str, Any] = {"seat_max": None, "crows_max": None, "stereoset_max": None,
                                     "bias_ir_queries": None, "utility_per_class": 10, "batch_size": 64}
#: metadata of a :class:`Protocol` field that the loader fills in: not a key of a protocol file
_LOADER = {"in_file": False}
#: the utilities a claim may keep: the metrics the claims are decided on that are not gaps
_UTILITIES = tuple(m for m in GAP_METRICS if m not in ROW_GAPS)


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
    holds the name in all three cases. The fields are the keys of a claim in a protocol file."""

    gap: str
    baseline: str
    score: str = ""
    statistic: str = ""
    paper_effect: float | None = None
    utility: str = "accuracy"
    leakage: bool = False
    leakage_paper_effect: float | None = None
    margin: float = 0.02
    #: a claim against another method (``faircl bench --against``): decided in a family of its own, after the
    #: protocol's own claims, with its utility judged against the protocol's first baseline
    against: bool = False


@dataclass(kw_only=True)
class Protocol:
    """One resolved protocol (after ``extends`` and, in quick mode, ``quick``).

    Its fields are the keys of a protocol file (:func:`file_keys`; a file may also say ``extends``), but the three
    the loader fills in (``suite``, ``source``, ``raw``); the fields without a default must be in the file (or its
    parent). ``quick`` is, in a file, the block ``--quick`` merges over the protocol and, here, whether it was."""

    version: int
    input_kind: str
    data: dict[str, Any]
    model: dict[str, Any]
    trainer: dict[str, Any]
    baselines: dict[str, dict[str, Any]]
    claims: list[Claim]
    name: str = ""  # the file's name: a file that says its name says that one
    title: str = ""  # default: the name
    paper: str = ""
    selection: dict[str, Any] = field(default_factory=dict)
    seeds: int = 3
    views: bool = False
    requires_data: str | None = None
    control: bool = False
    notes: str = ""
    applies_to: tuple[str, ...] = ()
    evaluate: dict[str, Any] = field(default_factory=dict)
    on_request: bool = False
    #: the share of ``trainer.max_epochs`` a two-stage method spends on stage 1 (its ``stage1_epochs``), where the
    #: protocol follows a paper's rule (Chi et al.: 60%); read by the benchmark front-ends' grids, not in :meth:`key`
    stage1_share: float | None = None
    #: the smallest reduction of a gap worth claiming (a fraction, sign ignored), with its reason: a claim without a
    #: paper effect (e.g. one added by ``--against``) is judged against it
    smallest_effect: float | None = None
    smallest_effect_reason: str = ""
    #: where the data can be enlarged (a synthetic set), its argument that sets the test rows (``n_test``): an
    #: inconclusive claim then also says how many test rows its seeds would need
    test_rows: str | None = None
    quick: bool = False
    suite: str = field(default="", metadata=_LOADER)
    source: str = field(default="", metadata=_LOADER)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, metadata=_LOADER)

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


def file_keys() -> list[str]:
    """The keys of a protocol file: the fields of :class:`Protocol` that the loader does not fill in, and
    ``extends``."""
    return sorted([f.name for f in fields(Protocol) if f.metadata.get("in_file", True)] + ["extends"])


def _required(cls: type) -> list[str]:
    return [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]


def _expected(hint: Any) -> str:
    """A type of a field in words, for an error message."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_expected(h) for h in typing.get_args(hint))
    if typing.get_origin(hint) in (list, tuple):
        return f"a list of {_expected(typing.get_args(hint)[0]).removeprefix('a ')}s"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping",
             type(None): "null"}
    return words.get(typing.get_origin(hint) or hint, "a mapping")


def _fits(value: Any, hint: Any) -> bool:
    """Whether a value read from YAML has the type of a field (a dataclass field: a mapping)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_fits(value, h) for h in args)
    if origin in (list, tuple):
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    if origin is dict or hint is dict or is_dataclass(hint):
        return isinstance(value, dict)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _checked(cls: type, values: dict[str, Any], where: str, what: str) -> dict[str, Any]:
    """``values`` checked against the fields of the dataclass ``cls``: no key it lacks (one line naming the key and
    the keys it has), every field without a default given, every value of its field's type."""
    hints = typing.get_type_hints(cls)
    keys = [f.name for f in fields(cls) if f.metadata.get("in_file", True)]
    for key, value in values.items():
        if key not in hints:
            raise UserError(f"bench: {where}: unknown key {key!r} ({what} has the keys {', '.join(sorted(keys))})")
        if not _fits(value, hints[key]):
            raise UserError(f"bench: {where}: {key!r} must be {_expected(hints[key])}, got {value!r}")
    missing = [k for k in _required(cls) if k not in values]
    if missing:
        raise UserError(f"bench: {where} has no {missing[0]!r} ({what} needs {', '.join(_required(cls))})")
    return values


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise UserError(f"bench: {path} is not valid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(data, dict):
        raise UserError(f"bench: {path} must hold a mapping (a protocol), not {type(data).__name__}")
    unknown = sorted(set(data) - set(file_keys()))
    if unknown:
        raise UserError(f"bench: {path}: unknown key {unknown[0]!r} (a protocol has the keys {', '.join(file_keys())})")
    return data


def _resolve(name: str, files: dict[str, Path], seen: tuple[str, ...] = ()) -> dict[str, Any]:
    if name in seen:
        raise UserError(f"bench: protocols extend each other in a cycle: {' -> '.join([*seen, name])}")
    data = _read(files[name])
    parent = data.get("extends")
    if parent is None:
        return data
    if parent not in files:
        raise UserError(f"bench: {files[name]}: extends {parent!r}, which is not a protocol of the suite "
                       f"({', '.join(sorted(files))})")
    base = {k: v for k, v in _resolve(parent, files, (*seen, name)).items()
            if k not in ("control", "notes", "name", "on_request")}
    merged = deep_merge(base, {k: v for k, v in data.items() if k != "extends"})
    for key in _REPLACED:  # a rule or a set of baselines is given whole: merging two would mix them
        if key in data:
            merged[key] = copy.deepcopy(data[key])
    return merged


def _claim(file: str, i: int, item: Any, baselines: dict[str, Any]) -> Claim:
    where = f"{file}: claims[{i}]"
    if not isinstance(item, dict):
        raise UserError(f"bench: {where} must be a mapping {{gap, baseline, ...}}, got {item!r}")
    named = [k for k in ("gap", "score", "statistic") if k in item]
    if len(named) != 1:
        raise UserError(f"bench: {where} needs one of 'gap' (a metric of the rows), 'score' (an item-level score of "
                       "the embeddings suite) or 'statistic' (a scalar of the test report with no attribute, e.g. "
                       f"cluster_dominance), got {item!r}")
    c = _checked(Claim, {**item, "gap": item[named[0]]}, where, "a claim")
    if named == ["gap"] and c["gap"] not in ROW_GAPS:  # what results.py decides a gap on: the runs' rows
        raise UserError(f"bench: {where}: gap {c['gap']!r} is not a gap a claim is decided on (the gaps recomputed "
                       f"from the runs' rows: {', '.join(ROW_GAPS)})")
    if c.get("utility", "accuracy") not in _UTILITIES:
        raise UserError(f"bench: {where}: utility {c['utility']!r} is not one of {', '.join(_UTILITIES)}")
    if c["baseline"] not in baselines:
        raise UserError(f"bench: {where} names baseline {c['baseline']!r}, not one of {sorted(baselines)}")
    if "score" in c and c["score"] not in ITEM_SCORES:
        raise UserError(f"bench: {where}: score {c['score']!r} is not one of {list(ITEM_SCORES)}")
    if "statistic" in c and not c["statistic"].isidentifier():
        raise UserError(f"bench: {where}: statistic must name a scalar of the test report (e.g. cluster_dominance), "
                       f"got {c['statistic']!r}")
    return Claim(**c)


def _protocol(name: str, suite: str, files: dict[str, Path], quick: bool) -> Protocol:
    path = files[name]
    raw = _resolve(name, files)
    if raw.get("name", name) != name:
        raise UserError(f"bench: {path} says name: {raw['name']!r}; a protocol's name is its file name ({name!r})")
    block = raw.pop("quick", None)
    if block is not None and not isinstance(block, dict):
        raise UserError(f"bench: {path}: 'quick' must be a mapping (the keys --quick merges over the protocol), got "
                       f"{block!r}")
    # the whole file is checked whatever the options: the protocol, then its quick variant (where only the latter
    # fails, its quick block is the reason)
    full = _variant(name, suite, str(path), raw, False, str(path))
    short = _variant(name, suite, str(path), deep_merge(raw, block or {}), True, f"{path}: quick")
    return short if quick else full


def _variant(name: str, suite: str, source: str, raw: dict[str, Any], quick: bool, where: str) -> Protocol:
    """One variant of a protocol (``raw``: resolved, ``quick`` merged or not) checked; errors name ``where``."""
    values = {k: v for k, v in raw.items() if k != "extends"}
    if isinstance(values.get("applies_to"), str):  # one class name or a list of them
        values["applies_to"] = [values["applies_to"]]
    values = _checked(Protocol, values, where, "a protocol")
    # what the types cannot say
    data_class = values["data"].get("class_path")
    if not isinstance(data_class, str) or not isinstance(values["data"].get("init_args", {}), dict):
        raise UserError(f"bench: {where}: 'data' must be {{class_path: <datamodule>, init_args: {{...}}}}")
    if "." not in data_class and data_class not in DATAMODULES:  # a dotted path is imported before any run
        raise UserError(f"bench: {where}: data.class_path {data_class!r} is not a faircl datamodule "
                       f"({', '.join(sorted(DATAMODULES))}); a class of your own is given by its dotted path "
                       "(my_data.MyData for class MyData in my_data.py of the current folder)")
    if not values["baselines"] or not all(isinstance(b, dict) and "class_path" in b
                                          for b in values["baselines"].values()):
        raise UserError(f"bench: {where}: 'baselines' must map names to {{class_path: <method>, init_args: ...}}")
    if not values["claims"]:
        raise UserError(f"bench: {where}: 'claims' must be a non-empty list of {{gap, baseline, ...}}")
    scores = [c["score"] for c in values["claims"] if isinstance(c, dict) and c.get("score")]
    if scores and "evaluate" not in values:
        raise UserError(f"bench: {where}: claims on {scores} need an 'evaluate' block (the bias sets' subset sizes; "
                       "{} for all items)")
    unknown = sorted(set(values.get("evaluate") or {}) - set(EVALUATE_DEFAULTS))
    if unknown:
        raise UserError(f"bench: {where}: 'evaluate' must be a mapping of {', '.join(EVALUATE_DEFAULTS)}; unknown "
                       f"key {unknown[0]!r}")
    rows_arg = values.get("test_rows")
    if rows_arg is not None and not isinstance(values["data"].get("init_args", {}).get(rows_arg), int):
        raise UserError(f"bench: {where}: 'test_rows' must name an integer argument of data.init_args (e.g. n_test), "
                       f"got {rows_arg!r}")
    effect = values.get("smallest_effect")
    if effect is not None and not (0 < effect < 1 and values.get("smallest_effect_reason", "").strip()):
        raise UserError(f"bench: {where}: 'smallest_effect' must be a fraction in (0, 1) (0.02 = 2 points) with its "
                       f"'smallest_effect_reason', got {effect!r}")
    if "applies_to" in values and not values["applies_to"]:
        raise UserError(f"bench: {where}: 'applies_to' must name a method class or a list of them")
    return Protocol(**{
        **values, "name": name, "suite": suite, "quick": quick, "source": source, "raw": raw,
        "title": values.get("title", name), "notes": values.get("notes", "").strip(),
        "selection": check_selection(dict(values.get("selection") or {}), where),
        "claims": [_claim(where, i, c, values["baselines"]) for i, c in enumerate(values["claims"])],
        "applies_to": tuple(values.get("applies_to") or ()),
        "evaluate": {**EVALUATE_DEFAULTS, **values["evaluate"]} if values.get("evaluate") is not None else {}})


def load_suite(suite: str, quick: bool = False) -> list[Protocol]:
    """The protocols of a shipped suite (``text``, ``vision``, ``embeddings``) or of a folder of protocol files,
    resolved (``extends``; ``quick`` merged over each when ``quick``), in file-name order."""
    folder = Path(suite)
    if not (folder.is_dir() and any(folder.glob("*.yaml"))):
        folder = _protocol_dir() / suite
        if not folder.is_dir():
            raise UserError(f"bench: no suite {suite!r}; the suites are {', '.join(suite_names())} (faircl bench "
                           "--list), or give a folder of protocol .yaml files")
    files = {p.stem: p for p in sorted(folder.glob("*.yaml"))}
    name = folder.name
    return [_protocol(n, name, files, quick) for n in files]
