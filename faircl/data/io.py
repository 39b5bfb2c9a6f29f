"""The input layer shared by every data source: reading tables, the split rule, unknown values and error messages.

* :func:`read_table` reads CSV / TSV / JSON-lines / parquet / pickle files as a pandas DataFrame (CSV cells kept as
  strings); :func:`read_csv_rows` reads a small CSV with its line numbers, for messages naming the line.
* :func:`stratified_split` is the one seeded split rule (stratified by (label, attribute) cell) and
  :func:`stratified_take` the one seeded row cap (``max_rows``).
* :data:`UNKNOWN_VALUES` and :func:`is_unknown` say which attribute values mean "unknown".
* :class:`DataError` and :func:`where` make messages that name the file, the column and the row.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DataError", "where", "located", "require_path", "read_table", "read_csv_rows", "require_columns",
    "UNKNOWN_VALUES", "is_unknown", "texts_of", "float_column", "int_in", "stratified_split", "stratified_take",
    "SPLIT_ALIASES", "PICKLE_SUFFIXES", "check_pickle_allowed", "label_values",
]

#: Suffixes read with pickle (Bias in Bios' published format): loading one runs code from the file.
PICKLE_SUFFIXES: tuple[str, ...] = (".pkl", ".pickle")

#: Raw attribute values that mean "unknown" (compared case-insensitively after stripping); ``None`` and NaN too.
UNKNOWN_VALUES: tuple[str, ...] = ("x", "", "nan", "none", "unknown", "-1", "na", "n/a")
#: Values of a split column and the split they name.
SPLIT_ALIASES: dict[str, str] = {"train": "train", "val": "val", "dev": "val", "valid": "val", "validation": "val",
                                 "test": "test"}


class DataError(ValueError):
    """Bad input data: the message names the file, column and row where it can."""


def where(source: Any = None, column: str | None = None, row: int | None = None) -> str:
    """``file 'path', column 'c', row 3`` (the parts that are given; empty when none is)."""
    parts = []
    if source is not None and str(source):
        parts.append(f"file {str(source)!r}")
    if column is not None:
        parts.append(f"column {column!r}")
    if row is not None:
        parts.append(f"row {row}")
    return ", ".join(parts)


def located(source: Any = None, column: str | None = None, row: int | None = None) -> str:
    """:func:`where` in parentheses with a leading space (``" (file 'x', row 3)"``), or ``""``."""
    text = where(source, column, row)
    return f" ({text})" if text else ""


def require_path(path: Path, what: str, hint: str = "") -> Path:
    """``path`` if it exists, else a :class:`FileNotFoundError` saying what was expected there."""
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {str(path)!r}." + (f" {hint}" if hint else ""))
    return path


def check_pickle_allowed(path: Path, allow_pickle: bool) -> None:
    """Raise :class:`DataError` for a pickle file unless ``allow_pickle``: unpickling runs code from the file."""
    if Path(path).suffix.lower() in PICKLE_SUFFIXES and not allow_pickle:
        raise DataError(f"{where(path)}: pickle files are not read by default, because loading one can run arbitrary "
                        "code from the file; pass allow_pickle=True (--data.init_args.allow_pickle true) only for a "
                        "file from a source you trust, or convert it to CSV / parquet")


def read_table(path: Path, sep: str | None = None, quotes: bool = True, allow_pickle: bool = False) -> Any:
    """A CSV / TSV / pickle / parquet / JSON-lines file as a pandas DataFrame (CSV cells kept as strings).

    ``quotes=False`` reads every field verbatim (no quote processing), for TSV files whose texts hold stray quotes.
    Pickle files need ``allow_pickle=True`` (loading one runs code from the file: trusted sources only).
    """
    import pandas as pd

    path = Path(path)
    suffix = path.suffix.lower()
    check_pickle_allowed(path, allow_pickle)
    try:
        if suffix in PICKLE_SUFFIXES:
            obj = pd.read_pickle(path)
            return obj if isinstance(obj, pd.DataFrame) else pd.DataFrame(list(obj))
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".json"):
            return pd.read_json(path, lines=suffix == ".jsonl")
        if sep is None:
            sep = "\t" if suffix == ".tsv" else ","
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, quoting=0 if quotes else 3)
    except (ValueError, TypeError, KeyError, OSError, EOFError, ImportError, IndexError, AttributeError,
            UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise DataError(f"cannot read {where(path)}: {_first_line(err)}") from None


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0][:300] if lines else type(err).__name__


def _number(text: str) -> float | None:
    """``float(text)`` for a finite decimal number, else None (``nan``, ``inf`` and words are not numbers)."""
    try:
        f = float(text)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _canonical(f: float) -> str:
    return str(int(f)) if f == int(f) else repr(f)


def category_key(value: Any) -> str:
    """The key of an attribute (or label) cell: numerically equal spellings are one key (``1``, ``1.0``, `` 1 ``,
    ``1e0`` → ``"1"``; non-integers their shortest ``repr``), any other cell its stripped text."""
    text = str(value).strip()
    num = _number(text)
    return text if num is None else _canonical(num)


def sorted_categories(keys: Any) -> list[str]:
    """Distinct category keys in group order: by value when every key is a number, else as strings."""
    keys = set(keys)
    if keys and all(_number(k) is not None for k in keys):
        return sorted(keys, key=float)
    return sorted(keys)


def label_values(values: Sequence[Any], locate: Any = None) -> tuple[list[str], bool]:
    """Label cells as class keys: ``(keys, numeric)``.

    When every cell is a number, numerically equal spellings (``1``, ``1.0``, `` 1 ``, ``1e0``) give the same key
    (``"1"``; non-integers their shortest ``repr``) and ``numeric`` is True, so classes sort by value. When no cell is
    a number the stripped strings are returned. A column mixing numbers and text raises :class:`DataError`;
    ``locate(r)`` (when given) returns where cell ``r`` is (file, column, row) for the message.
    """
    texts = [str(v).strip() for v in values]
    nums = [_number(t) for t in texts]
    is_num = [n is not None for n in nums]
    if texts and all(is_num):
        return [_canonical(n) for n in nums], True
    if any(is_num):
        # name the first cell of the minority kind
        odd = not (sum(is_num) * 2 >= len(texts))
        r = next(i for i, k in enumerate(is_num) if k == odd)
        place = locate(r) if locate is not None else where(row=r)
        example = next(texts[i] for i, k in enumerate(is_num) if k != odd)
        raise DataError(f"{place}: label {texts[r]!r} mixes numeric and text labels in one column "
                        f"(e.g. {example!r}); use one kind, or pass class_names")
    return texts, False


def read_csv_rows(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV with a header as ``(line number, row dict)``; missing columns, short rows, bad encoding or bad
    quoting raise DataError."""
    try:
        return _read_csv_rows(path, required)
    except UnicodeDecodeError as err:
        raise DataError(f"file {str(path)!r}: not UTF-8 text (byte {err.start}: {err.reason})") from None
    except csv.Error as err:
        raise DataError(f"file {str(path)!r}: malformed CSV ({err})") from None


def _read_csv_rows(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        absent = [c for c in required if c not in header]
        if absent:
            raise DataError(f"file {str(path)!r}, line 1: missing column(s) {absent}; header is {header}")
        out = []
        for row in reader:
            line = reader.line_num
            if None in row or any(row.get(c) is None for c in header):
                raise DataError(f"file {str(path)!r}, line {line}: expected {len(header)} fields ({header})")
            for c in required:
                if not str(row[c]).strip():
                    raise DataError(f"file {str(path)!r}, line {line}, column {c!r}: empty value")
            out.append((line, row))
    if not out:
        raise DataError(f"file {str(path)!r} has a header but no rows")
    return out


def require_columns(df: Any, columns: Sequence[str], path: Path) -> None:
    """Raise :class:`DataError` naming the file and the first missing column."""
    for c in columns:
        if c not in df.columns:
            raise DataError(f"{where(path, c)}: column missing; the file has columns {list(df.columns)}")


def is_unknown(value: Any, unknown: Sequence[Any] = UNKNOWN_VALUES) -> bool:
    """Missing / NaN / one of the ``unknown`` spellings (case-insensitive)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return str(value).strip().lower() in _spellings(tuple(unknown))


@lru_cache(maxsize=64)
def _spellings(unknown: tuple) -> frozenset[str]:
    return frozenset(str(u).strip().lower() for u in unknown if u is not None)


def texts_of(df: Any, column: str, path: Path) -> list[str]:
    """The text column as strings; a missing or empty text raises :class:`DataError` naming the row."""
    out = []
    for r, v in enumerate(df[column].tolist()):
        if v is None or (isinstance(v, float) and math.isnan(v)) or not str(v).strip():
            raise DataError(f"{where(path, column, r)}: empty text")
        out.append(str(v))
    return out


def float_column(df: Any, column: str, path: Path, low: float = -math.inf, high: float = math.inf,
                 allow_missing: bool = False) -> np.ndarray:
    """A numeric column (NaN where missing when ``allow_missing``); bad values raise :class:`DataError`."""
    out = np.empty(len(df), dtype=np.float64)
    for r, v in enumerate(df[column].tolist()):
        if is_unknown(v, ("", "nan", "none", "na")):
            if not allow_missing:
                raise DataError(f"{where(path, column, r)}: missing value")
            out[r] = np.nan
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise DataError(f"{where(path, column, r)}: {v!r} is not a number") from None
        if not low <= f <= high:
            raise DataError(f"{where(path, column, r)}: {f} outside [{low}, {high}]")
        out[r] = f
    return out


def int_in(value: str, path: Path, column: str, line: int, lo: int, hi: int) -> int:
    """An integer cell in ``[lo, hi]``; otherwise a :class:`DataError` naming file, line and column."""
    try:
        v = int(str(value).strip())
    except ValueError:
        raise DataError(f"file {str(path)!r}, line {line}, column {column!r}: {value!r} is not an integer") from None
    if not lo <= v <= hi:
        raise DataError(f"file {str(path)!r}, line {line}, column {column!r}: {v} outside [{lo}, {hi}]")
    return v


def _cells(y: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Cell id of every row: the rank of its ``(label, attribute)`` pair among the distinct pairs."""
    pairs = np.stack([np.asarray(y, dtype=np.int64).reshape(-1), np.asarray(a, dtype=np.int64).reshape(-1)], 1)
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)


def stratified_split(y: np.ndarray, a: np.ndarray, val_fraction: float, test_fraction: float,
                     seed: int) -> dict[str, np.ndarray]:
    """Seeded split of row indices, stratified by (label, attribute) cell: ``{"train", "val", "test"}`` → indices.

    Rows are shuffled within their cell and laid out cell after cell; position ``k`` goes to test when
    ``floor((k+1)·t) > floor(k·t)`` (``t = test_fraction``), and the remaining rows go to val by the same rule with
    ``val_fraction / (1 − t)``. So the split sizes are exact overall, every cell gets its share within one row, and
    tiny data still gets non-empty val/test splits. Indices are sorted within each split.
    """
    if not (0 <= val_fraction < 1 and 0 <= test_fraction < 1 and val_fraction + test_fraction < 1):
        raise ValueError(f"val_fraction={val_fraction} and test_fraction={test_fraction} must be in [0, 1) with "
                         "a sum below 1")
    rng = np.random.default_rng([int(seed), 104729])
    cells = _cells(y, a)
    n = len(cells)
    if n == 0:
        return {s: np.zeros(0, dtype=np.int64) for s in ("train", "val", "test")}
    order = np.concatenate([rng.permutation(np.flatnonzero(cells == c)) for c in np.unique(cells)])
    k = np.arange(n)
    is_test = np.floor((k + 1) * test_fraction) > np.floor(k * test_fraction)
    rest = order[~is_test]
    vf = val_fraction / (1.0 - test_fraction)
    k = np.arange(len(rest))
    is_val = np.floor((k + 1) * vf) > np.floor(k * vf)
    return {"train": np.sort(rest[~is_val]), "val": np.sort(rest[is_val]), "test": np.sort(order[is_test])}


def stratified_take(y: np.ndarray, a: np.ndarray, max_rows: int, seed: int) -> np.ndarray:
    """About ``max_rows`` row indices, the same share of every (label, attribute) cell, seeded; sorted."""
    rng = np.random.default_rng([int(seed), 15485863])
    cells = _cells(y, a)
    frac = max_rows / len(cells)
    take = []
    for c in np.unique(cells):
        rows = np.flatnonzero(cells == c)
        k = max(1, int(round(frac * len(rows))))
        take.append(rng.choice(rows, size=min(k, len(rows)), replace=False))
    return np.sort(np.concatenate(take))
