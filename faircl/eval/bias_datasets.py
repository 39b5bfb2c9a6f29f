"""Readers of the embedding-bias benchmarks: SEAT, CrowS-Pairs, StereoSet (intrasentence) and Grep-BiasIR."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from faircl.data.io import DataError

__all__ = ["SeatTest", "load_seat", "SEAT_GENDER_TESTS", "CrowsPair", "load_crows_pairs", "StereoSetItem",
           "load_stereoset_intrasentence", "BiasIRQuery", "load_grep_bias_ir"]


@dataclass
class SeatTest:
    """One SEAT/WEAT test: two target sets X, Y and two attribute sets A, B (sentences or words)."""

    name: str
    targ1: list[str]
    targ2: list[str]
    attr1: list[str]
    attr2: list[str]
    categories: tuple[str, str, str, str] = ("targ1", "targ2", "attr1", "attr2")


def load_seat(path: str | Path) -> SeatTest:
    """A SEAT test file: one JSON object ``{targ1, targ2, attr1, attr2: {category, examples}}``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SEAT file {str(path)!r} not found")
    obj = json.loads(path.read_text(encoding="utf-8"))
    keys = ("targ1", "targ2", "attr1", "attr2")
    for k in keys:
        if k not in obj or not isinstance(obj[k], dict) or not obj[k].get("examples"):
            raise DataError(f"SEAT file {str(path)!r}: key {k!r} with a non-empty 'examples' list is required")
    name = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return SeatTest(name, *(list(obj[k]["examples"]) for k in keys),
                    categories=tuple(str(obj[k].get("category", k)) for k in keys))


#: The gender SEAT tests (May et al. 2019; CCD paper Table 2 uses 6, 6b, 7, 7b, 8, 8b).
SEAT_GENDER_TESTS = ("sent-weat6", "sent-weat6b", "sent-weat7", "sent-weat7b", "sent-weat8", "sent-weat8b")


@dataclass
class CrowsPair:
    """A CrowS-Pairs row: the more and the less stereotyping sentence, and the direction."""

    more: str
    less: str
    direction: str
    bias_type: str


def load_crows_pairs(path: str | Path, bias_type: str | None = "gender") -> list[CrowsPair]:
    """CrowS-Pairs CSV (``sent_more, sent_less, stereo_antistereo, bias_type``), optionally one bias type."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CrowS-Pairs file {str(path)!r} not found")
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        need = {"sent_more", "sent_less", "stereo_antistereo", "bias_type"}
        if not need <= set(reader.fieldnames or []):
            raise DataError(f"CrowS-Pairs file {str(path)!r} needs columns {sorted(need)}, has {reader.fieldnames}")
        for row in reader:
            if bias_type is None or row["bias_type"] == bias_type:
                out.append(CrowsPair(row["sent_more"], row["sent_less"], row["stereo_antistereo"], row["bias_type"]))
    return out


@dataclass
class StereoSetItem:
    """A StereoSet intrasentence item: the context with ``BLANK`` and the three completions."""

    target: str
    bias_type: str
    context: str
    stereotype: str
    anti_stereotype: str
    unrelated: str


def load_stereoset_intrasentence(path: str | Path, bias_type: str | None = "gender") -> list[StereoSetItem]:
    """StereoSet intrasentence items from the flattened ``test.jsonl`` or the nested ``gender_test.json`` format."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"StereoSet file {str(path)!r} not found")
    text = path.read_text(encoding="utf-8").strip()
    out = []
    if text.startswith("["):
        for r, obj in enumerate(json.loads(text)):
            d = obj.get("data", {})
            try:
                item = StereoSetItem(obj["target"], obj["bias_type"], obj["context"], d["stereotype"]["sentence"],
                                     d["anti-stereotype"]["sentence"], d["unrelated"]["sentence"])
            except KeyError as e:
                raise DataError(f"StereoSet file {str(path)!r} item {r}: missing {e}") from None
            if bias_type is None or item.bias_type == bias_type:
                out.append(item)
        return out
    for r, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj.get("type", "intrasentence") != "intrasentence":
            continue
        try:
            item = StereoSetItem(obj["target"], obj["bias_type"], obj["context"], obj["stereotype"],
                                 obj["anti-stereotype"], obj["unrelated"])
        except KeyError as e:
            raise DataError(f"StereoSet file {str(path)!r} row {r}: missing {e}") from None
        if bias_type is None or item.bias_type == bias_type:
            out.append(item)
    return out


@dataclass
class BiasIRQuery:
    """A Grep-BiasIR query with its documents (each in male, female and neutral wording)."""

    q_id: str
    category: str
    query: str
    documents: list[str]
    genders: list[str]  # F / M / N (a few rows: BOTH) per document
    relevant: list[int]


def load_grep_bias_ir(folder: str | Path) -> list[BiasIRQuery]:
    """Grep-BiasIR: ``queries.csv`` and ``queries-documents_<CATEGORY>.csv`` (names with spaces and ``&``)."""
    folder = Path(folder)
    qfile = folder / "queries.csv"
    if not qfile.is_file():
        raise FileNotFoundError(f"Grep-BiasIR queries file {str(qfile)!r} not found")
    with qfile.open(newline="", encoding="utf-8") as f:
        cats = {row["q_id"]: row["category"] for row in csv.DictReader(f)}
    by_q: dict[str, BiasIRQuery] = {}
    files = sorted(folder.glob("queries-documents_*.csv"))
    if not files:
        raise FileNotFoundError(f"no queries-documents_*.csv files in {str(folder)!r}")
    need = {"q_id", "relevant", "query", "document", "content_gender"}
    for p in files:
        category = p.stem[len("queries-documents_"):]
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if not need <= set(reader.fieldnames or []):
                raise DataError(f"Grep-BiasIR file {str(p)!r} needs columns {sorted(need)}, has {reader.fieldnames}")
            for r, row in enumerate(reader):
                g = row["content_gender"].strip().upper()
                if not g:
                    raise DataError(f"Grep-BiasIR file {str(p)!r} row {r}: empty content_gender")
                q = by_q.setdefault(row["q_id"], BiasIRQuery(row["q_id"], cats.get(row["q_id"], category),
                                                             row["query"], [], [], []))
                q.documents.append(row["document"])
                q.genders.append(g)
                q.relevant.append(int(row["relevant"]))
    return list(by_q.values())
