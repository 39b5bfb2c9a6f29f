"""No code runs from a file: ``faircl export`` and every checkpoint reader load with ``weights_only=True`` and refuse a
crafted checkpoint in one line that names the code it holds; no unsafe loader appears anywhere in ``faircl/``."""

from __future__ import annotations

import io
import os
import tokenize
from pathlib import Path

import torch

import faircl
from faircl.checkpoints import CheckpointError, check_checkpoint
from faircl.cli import main

PACKAGE = Path(faircl.__file__).resolve().parent


class _RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _crafted(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran"
    path = tmp_path / "crafted.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(1)}, "epoch": 0, "payload": _RunsCode(marker)}, path)
    return path, marker


def test_export_runs_no_code_from_a_checkpoint(tmp_path, capsys):
    path, marker = _crafted(tmp_path)
    code = main(["export", "--ckpt_path", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    assert "posix.system" in err and "never runs code" in err and "Traceback" not in err


def test_a_crafted_checkpoint_is_refused_naming_the_code_it_holds(tmp_path):
    path, marker = _crafted(tmp_path)
    try:
        check_checkpoint(path)
    except CheckpointError as err:
        message = str(err)
    else:
        raise AssertionError("a checkpoint holding code was accepted")
    assert not marker.exists()
    assert "refused" in message and "(posix.system)" in message and "never runs code from files" in message
    assert "weights_only" not in message and "Re-running" not in message and "\n" not in message


def _unsafe_calls(source: str) -> list[str]:
    """``weights_only=False``, ``pickle.load(`` / ``pickle.loads(`` and ``yaml.load(`` without a safe loader, read from
    the tokens (so a message that quotes them is not a call)."""
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
    found = []
    for i, t in enumerate(toks[:-2]):
        nxt, third = toks[i + 1].string, toks[i + 2].string
        if t.string == "weights_only" and nxt == "=" and third == "False":
            found.append(f"line {t.start[0]}: weights_only=False")
        if t.string in ("pickle", "cPickle", "dill") and nxt == "." and third in ("load", "loads", "Unpickler"):
            found.append(f"line {t.start[0]}: {t.string}.{third}")
        if t.string == "yaml" and nxt == "." and third in ("load", "load_all", "unsafe_load", "full_load"):
            j, depth, args = i + 3, 0, []
            while j < len(toks):
                depth += toks[j].string == "("
                depth -= toks[j].string == ")"
                args.append(toks[j].string)
                if depth == 0:
                    break
                j += 1
            if third != "load" or "SafeLoader" not in args and "CSafeLoader" not in args:
                found.append(f"line {t.start[0]}: yaml.{third} without a safe loader")
    return found


def test_no_unsafe_loader_anywhere_in_the_package():
    bad = [f"{p.relative_to(PACKAGE.parent)} {hit}" for p in sorted(PACKAGE.rglob("*.py"))
           for hit in _unsafe_calls(p.read_text())]
    assert not bad, "unsafe loaders: " + "; ".join(bad)


def test_the_unsafe_loader_check_can_fail():
    assert len(_unsafe_calls("torch.load(p, weights_only=False)\npickle.load(fh)\nyaml.load(text)\n")) == 3
    assert not _unsafe_calls("yaml.load(text, Loader=yaml.SafeLoader)\nmsg = 'weights_only=False'\n")
