"""The search space and the objectives of ``faircl sweep``: parsing ``--search`` / ``--objectives`` and checking them
against the method, datamodule and trainer they set, before any training starts.

``--search PATH=RANGE`` (repeatable), where ``PATH`` is a ``model.``, ``data.`` or ``trainer.`` argument (as on the
``faircl fit`` command line, ``model.init_args.X`` = ``model.X``; a key inside a dict argument such as
``model.encoder_kwargs.hidden_dim`` is allowed) and ``RANGE`` is one of

- ``LOW:HIGH`` — a float, uniform; ``LOW:HIGH:STEP`` — on a grid of ``STEP``;
- ``log:LOW:HIGH`` — a float, log-uniform (``0 < LOW < HIGH``);
- ``int:LOW:HIGH`` / ``int:log:LOW:HIGH`` — an integer (bounds included);
- ``choice:A,B,C`` — one of the listed values (each read as YAML: ``0.1``, ``true``, ``none`` stay typed).

``--objectives METRIC:DIRECTION[,METRIC:DIRECTION...]`` with a validation metric (``val/accuracy``) and
``max`` | ``min``: one objective gives a single-objective study (with pruning), several a multi-objective one.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from faircl.runs.user_error import UserError

ROOTS = ("model", "data", "trainer")
#: model arguments the CLI links from the datamodule: not searchable
LINKED = ("num_classes", "num_groups", "input_dim")


@dataclass(frozen=True)
class Param:
    """One searched argument: ``path`` (``model.lambda_fair``) and its distribution."""

    path: str
    kind: str  # float | int | choice
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def suggest(self, trial: Any) -> Any:
        """The value of this argument in an Optuna ``trial`` (Optuna's ``suggest_*``)."""
        if self.kind == "choice":
            return trial.suggest_categorical(self.path, list(self.choices))
        if self.kind == "int":
            return trial.suggest_int(self.path, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.path, self.low, self.high, log=self.log, step=self.step)

    def example(self) -> Any:
        """A value inside the range (the low end), used to check the argument before training."""
        return self.choices[0] if self.kind == "choice" else (int(self.low) if self.kind == "int" else self.low)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["choices"] = list(self.choices)
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Param:
        return Param(**{**data, "choices": tuple(data.get("choices") or ())})


def _number(text: str, spec: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--search {spec}: {what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise UserError(f"--search {spec}: {what} must be finite, got {text!r}")
    return value


def parse_search(spec: str) -> Param:
    """``PATH=RANGE`` → ``Param``; a malformed range is a one-line ``UserError``."""
    usage = ("expected PATH=LOW:HIGH, PATH=LOW:HIGH:STEP, PATH=log:LOW:HIGH, PATH=int:LOW:HIGH, PATH=int:log:LOW:HIGH "
             "or PATH=choice:A,B,...")
    path, eq, rng = spec.partition("=")
    path = path.strip().removeprefix("--")
    if not eq or not path or not rng:
        raise UserError(f"--search {spec}: {usage}")
    parts = path.split(".")
    if parts[0] not in ROOTS or len(parts) < 2 or not all(parts):
        raise UserError(f"--search {spec}: the path must start with model., data. or trainer. (e.g. model.lambda_fair)")
    if len(parts) > 2 and parts[1] == "init_args":
        path = ".".join([parts[0], *parts[2:]])
    fields = rng.split(":")
    if fields[0] == "choice":
        items = ":".join(fields[1:]).split(",")
        if not items or any(not i.strip() for i in items):
            raise UserError(f"--search {spec}: a choice needs values separated by commas (choice:A,B)")
        values = tuple(yaml.safe_load(i.strip()) for i in items)
        if len(set(map(repr, values))) != len(values):
            raise UserError(f"--search {spec}: the choices repeat a value")
        return Param(path, "choice", choices=values)
    kind, log = "float", False
    if fields[0] == "int":
        kind, fields = "int", fields[1:]
    if fields and fields[0] == "log":
        log, fields = True, fields[1:]
    if len(fields) not in (2, 3) or (len(fields) == 3 and (log or kind == "int")):
        raise UserError(f"--search {spec}: {usage}")
    low, high = _number(fields[0], spec, "LOW"), _number(fields[1], spec, "HIGH")
    if not low < high:
        raise UserError(f"--search {spec}: LOW must be below HIGH, got {fields[0]} and {fields[1]}")
    if kind == "int" and (low != int(low) or high != int(high)):
        raise UserError(f"--search {spec}: an int range needs whole-number bounds")
    if log and low <= 0:
        raise UserError(f"--search {spec}: a log range needs LOW > 0, got {fields[0]}")
    step = None
    if len(fields) == 3:
        step = _number(fields[2], spec, "STEP")
        if step <= 0 or step > high - low:
            raise UserError(f"--search {spec}: STEP must be in (0, HIGH - LOW], got {fields[2]}")
    return Param(path, kind, low=low, high=high, log=log, step=step)


def parse_objectives(text: str) -> list[tuple[str, str]]:
    """``val/accuracy:max,val/tpr_gap_rms:min`` → ``[("val/accuracy", "maximize"), ...]``."""
    out: list[tuple[str, str]] = []
    for item in (t.strip() for t in text.split(",")):
        name, colon, direction = item.rpartition(":")
        if not colon or not name or direction not in ("max", "min", "maximize", "minimize"):
            raise UserError(f"--objectives {text}: each objective is METRIC:max or METRIC:min, got {item!r}")
        if not name.startswith("val/"):
            raise UserError(f"--objectives {text}: {name!r} is not a validation metric; the study selects on "
                           "validation metrics (val/...), `faircl compare` reports the test numbers")
        if name in (n for n, _ in out):
            raise UserError(f"--objectives {text}: {name!r} is given twice")
        out.append((name, "maximize" if direction.startswith("max") else "minimize"))
    return out


def _init_parameters(cls: type, stop: type | None) -> list[str]:
    """Arguments of ``cls.__init__`` and, through ``**kwargs``, of its bases up to ``stop``."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters.values()
        names += [p.name for p in params if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if klass is stop or not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return list(dict.fromkeys(names))


def check_paths(params: list[Param], model: Any, datamodule: Any, trainer_cls: type, model_base: type,
                data_base: type) -> None:
    """Every searched path names an argument of the instantiated method / datamodule / trainer class."""
    known = {"model": [n for n in _init_parameters(type(model), model_base) if n not in LINKED],
             "data": _init_parameters(type(datamodule), data_base),
             "trainer": _init_parameters(trainer_cls, trainer_cls)}
    owners = {"model": type(model).__name__, "data": type(datamodule).__name__, "trainer": "Trainer"}
    for p in params:
        root, name = p.path.split(".")[:2]
        if name not in known[root]:
            linked = " (linked from the datamodule, not searchable)" if name in LINKED and root == "model" else ""
            raise UserError(f"--search {p.path}: {owners[root]} has no argument {name!r}{linked}; its arguments: "
                           f"{', '.join(known[root])}")


def override(param: Param, value: Any) -> str:
    """The ``faircl fit`` command-line argument that sets ``param`` to ``value``."""
    text = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    return f"--{param.path}={text}"
