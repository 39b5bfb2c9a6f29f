"""On-disk cache of generated data that is the same on every run, such as SynthBios's bios for a data ``seed``.

A run's ``seed_everything`` varies between the seeds of a sweep or a bench, but the data a generator draws depends
only on its own arguments (SynthBios's ``seed`` fixes the bios), so every run rebuilt the same data (0.1–0.3 s a
call, twice a run: the fit's and the test's datamodule). The entry's name is a hash of the generator's arguments, of
its source files (an edited generator builds anew) and of the numpy and Python versions (whose generators draw the
data); a later call reads back exactly what the first stored (JSON). A write goes to a private file renamed into
place, so concurrent runs never read half an entry.

Directory: ``$FAIRCL_CACHE/generated``, else ``~/.cache/faircl/generated``. ``FAIRCL_GENERATED_CACHE=off`` builds
anew on every call and stores nothing (to time a rebuild, or to check the cache); it also turns off the store of
WordNet synonyms that EDA keeps beside the prepared WordNet (:mod:`faircl.data.augment.text`: parsing WordNet takes
about 4 s a process).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CACHE_VERSION", "OFF_ENV", "cached_json", "default_cache_dir", "enabled", "entry_key", "file_digest"]

#: bump when the stored format changes
CACHE_VERSION = 1
#: ``off`` (or ``0``, ``false``, ``no``): no cache, every call builds
OFF_ENV = "FAIRCL_GENERATED_CACHE"


def default_cache_dir() -> Path:
    """``$FAIRCL_CACHE/generated`` when the variable is set, else ``~/.cache/faircl/generated``."""
    root = os.environ.get("FAIRCL_CACHE")
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "faircl") / "generated"


def enabled() -> bool:
    """Whether the cache is used (``$FAIRCL_GENERATED_CACHE`` is not ``off``)."""
    return os.environ.get(OFF_ENV, "").strip().lower() not in ("off", "0", "false", "no")


_DIGESTS: dict[str, str] = {}


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (a generator's source), once per process."""
    key = str(path)
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _DIGESTS[key]


def entry_key(kind: str, spec: dict[str, Any], code: tuple[str | os.PathLike, ...] = ()) -> str:
    """The name of the entry of ``kind`` built from ``spec`` (JSON-able) by the code in the files ``code``."""
    body = {"version": CACHE_VERSION, "kind": kind, "spec": spec, "code": [file_digest(p) for p in code],
            "numpy": np.__version__, "python": list(sys.version_info[:2])}
    return f"{kind}-{hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]}"


def cached_json(kind: str, spec: dict[str, Any], build: Callable[[], Any],
                code: tuple[str | os.PathLike, ...] = (), cache_dir: str | os.PathLike | None = None) -> Any:
    """``build()``'s result (JSON-able: lists, dicts, strings, numbers), read from the cache when stored, else built
    and stored. ``spec`` holds every argument the result depends on; ``code`` the source files that build it."""
    if not enabled():
        return json.loads(json.dumps(build()))
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    path = root / f"{entry_key(kind, spec, code)}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass  # absent or unreadable: build it
    text = json.dumps(build())
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the run goes on with what it built
    return json.loads(text)  # what a later call reads back: lists, never tuples or arrays
