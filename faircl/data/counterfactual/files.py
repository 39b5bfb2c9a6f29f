"""Text and tuple files: source texts (CSV / TSV / JSONL / TXT) and counterfactual tuple files (CSV / JSONL)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from faircl.data.io import DataError

__all__ = ["read_texts", "read_tuple_file", "write_tuple_file"]


_TEXT_COLUMNS = ("text", "hard_text", "sentence_text", "Text", "sentence", "document", "comment", "bio")


def read_texts(path: str | Path, column: str | None = None, max_rows: int | None = None) -> list[str]:
    """Texts of a CSV / TSV (a text column, auto-detected among common names), JSONL (a key) or TXT (one per line).

    Args:
        path: the file.
        column: column or key holding the text (default: the first of ``text, hard_text, sentence_text, Text, ...``).
        max_rows: stop after this many rows.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"text file {str(path)!r} not found")
    suffix = path.suffix.lower()
    texts: list[str] = []
    if suffix in (".csv", ".tsv"):
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ",")
            fields = reader.fieldnames or []
            col = column or next((c for c in _TEXT_COLUMNS if c in fields), None)
            if col is None or col not in fields:
                raise DataError(f"file {str(path)!r} has no text column {column or list(_TEXT_COLUMNS)}; "
                                f"columns are {fields}")
            for row in reader:
                texts.append(row[col] or "")
                if max_rows and len(texts) >= max_rows:
                    break
    elif suffix in (".jsonl", ".json"):
        key = column or "text"
        for r, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            obj = json.loads(line)
            if key not in obj:
                raise DataError(f"file {str(path)!r} row {r} has no key {key!r}; keys are {sorted(obj)}")
            texts.append(str(obj[key]))
            if max_rows and len(texts) >= max_rows:
                break
    else:
        texts = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        texts = texts[:max_rows] if max_rows else texts
    return texts


def read_tuple_file(path: str | Path, versions: Sequence[str]) -> list[tuple[str, ...]]:
    """Tuples from a CSV (one column per version name) or JSONL (one key per version name).

    Args:
        path: ``.csv`` / ``.tsv`` / ``.jsonl``.
        versions: the column names in order, e.g. ``("male", "female", "neutral")``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"tuple file {str(path)!r} not found")
    rows: list[tuple[str, ...]] = []
    if path.suffix.lower() in (".csv", ".tsv"):
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
            missing = [v for v in versions if v not in (reader.fieldnames or [])]
            if missing:
                raise DataError(f"tuple file {str(path)!r} lacks column(s) {missing}; columns are {reader.fieldnames}")
            for r, row in enumerate(reader):
                vals = tuple((row[v] or "").strip() for v in versions)
                if not all(vals):
                    raise DataError(f"tuple file {str(path)!r} row {r}: empty version(s) "
                                    f"{[v for v, s in zip(versions, vals) if not s]}")
                rows.append(vals)
    else:
        for r, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            obj = json.loads(line)
            missing = [v for v in versions if v not in obj]
            if missing:
                raise DataError(f"tuple file {str(path)!r} row {r} lacks key(s) {missing}")
            rows.append(tuple(str(obj[v]).strip() for v in versions))
    return rows


def write_tuple_file(path: str | Path, tuples: Sequence[Sequence[str]], versions: Sequence[str]) -> Path:
    """Write tuples as CSV (``.csv``) or JSONL (anything else), readable by :func:`read_tuple_file`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(versions)
            w.writerows(tuples)
    else:
        with path.open("w", encoding="utf-8") as f:
            for t in tuples:
                f.write(json.dumps(dict(zip(versions, t)), ensure_ascii=False) + "\n")
    return path
