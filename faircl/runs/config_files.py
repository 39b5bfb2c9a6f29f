"""Names and files of the ``faircl`` command that need neither torch nor Lightning: the shipped configs by name
(resolved by the parsers' ``--config``) and reading a config file (``faircl configs`` runs on these alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from faircl.runs.user_error import UserError

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


# ----------------------------------------------------------------------------------------------------- configs
def shipped_configs() -> list[str]:
    """Names of the configs shipped with the package (``confair/biased_features``, ...)."""
    return sorted(p.relative_to(CONFIG_DIR).with_suffix("").as_posix() for p in CONFIG_DIR.rglob("*.yaml"))


def shipped_name(path: str | Path) -> str:
    """A config file's path as its shipped config's name (``ce/biased_features``) when it is one, else the path (a
    sweep's default folder is named after it)."""
    resolved = Path(path).expanduser().resolve()
    if resolved.is_relative_to(CONFIG_DIR) and resolved.suffix == ".yaml":
        return resolved.relative_to(CONFIG_DIR).with_suffix("").as_posix()
    return str(path)


def resolve_config(value: str) -> str:
    """A ``--config`` value as a file path: an existing file, or a shipped config by name (``confair/biased_features``,
    ``confair/biased_features.yaml`` or ``configs/confair/biased_features.yaml`` from any working directory)."""
    if Path(value).expanduser().is_file():
        return value
    name = value[len("configs/"):] if value.startswith("configs/") else value
    for cand in (CONFIG_DIR / name, CONFIG_DIR / f"{name}.yaml"):
        if cand.is_file():
            return str(cand)
    near = [n for n in shipped_configs() if name.split("/")[0] in n][:8]
    raise UserError(f"config {value!r} not found: it is neither a file nor a shipped config name "
                   f"(<method>/<dataset>, e.g. {', '.join(near or shipped_configs()[:4])}; list them all with "
                   "`faircl configs`)")


def read_config(path: str | Path) -> dict[str, Any]:
    """The mapping in the YAML config ``path`` (plain data only: ``yaml.safe_load``).

    Raises:
        UserError: unreadable file, malformed YAML (with the line and column), a Python tag such as
            ``!!python/object/apply`` (never constructed, never run), or a top level that is not a mapping.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"config {str(path)!r}: cannot be read ({type(err).__name__}: {err})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as err:
        where = f"line {err.problem_mark.line + 1}: " if err.problem_mark is not None else ""
        tag = (err.problem or "").split("tag", 1)[-1].strip(" '")
        raise UserError(f"config {str(path)!r}: {where}the tag {tag!r} is refused: a config holds plain data only "
                       "(faircl never constructs objects or runs code from a config)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise UserError(f"config {str(path)!r}: malformed YAML: {where}{problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"config {str(path)!r}: expected a mapping of sections (trainer:, model:, data:), got a "
                       f"{type(data).__name__}")
    return data
