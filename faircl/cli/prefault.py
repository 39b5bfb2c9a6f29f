"""Copy-on-write ahead of a run (Linux): the pages of a fork server that a forked run writes, learned once, copied by
each child while it waits for its run instead of one fault at a time during it.

A run forked from a fork server shares the server's memory until it writes to a page; then the kernel copies that
page, one fault each. On Python every object a run touches has its reference count written, so a short forked run of
a large server (torch, Lightning, faircl: ~900 MiB) takes ~11,000 such faults more than the same run in one process,
a few microseconds each on a virtual machine. :func:`learn` forks a probe that runs a sample run and reads which of
the server's pages it has made its own (``/proc/self/pagemap``: present and exclusively mapped); :func:`populate`,
called by each child forked ahead (a :class:`~faircl.cli.workers.RunPool` spare) before its run arrives, copies those
pages at once with ``madvise(MADV_POPULATE_WRITE)`` (Linux 5.14+), which leaves their content as it is.

Anything unavailable (another system, an older kernel, no ``/proc``) makes both a no-op: a run then faults as before.
``FAIRCL_NO_PREFAULT=1`` turns it off.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Callable, Sequence

__all__ = ["MADV_POPULATE_WRITE", "enabled", "learn", "populate", "supported", "writable_ranges", "written_pages"]

#: ``madvise`` advice that faults a range in writable, breaking copy-on-write (Linux 5.14+)
MADV_POPULATE_WRITE = 23
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: mappings never copied: the kernel's and the stack (a child's stack is its own)
_SKIP = ("[vvar]", "[vdso]", "[vsyscall]", "[stack]", "[vvar_vclock]")


def enabled() -> bool:
    """Linux with ``/proc/self/pagemap``, and not turned off by ``FAIRCL_NO_PREFAULT=1``."""
    return (sys.platform.startswith("linux") and os.environ.get("FAIRCL_NO_PREFAULT") != "1"
            and os.path.exists("/proc/self/pagemap"))


def supported() -> bool:
    """:func:`enabled`, and this kernel copies ahead (``MADV_POPULATE_WRITE``, Linux 5.14+): tried on a page of its
    own."""
    import mmap

    if not enabled():
        return False
    page = mmap.mmap(-1, PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        view = ctypes.c_char.from_buffer(page)
        ok = libc.madvise(ctypes.addressof(view), PAGE, MADV_POPULATE_WRITE) == 0
        del view
        return ok
    finally:
        page.close()


def writable_ranges(maps: str = "/proc/self/maps") -> list[tuple[int, int]]:
    """``(start, end)`` of this process's private writable mappings (those copy-on-write shares after a fork)."""
    out = []
    with open(maps) as f:
        for line in f:
            parts = line.split()
            perms = parts[1]
            if perms[:2] != "rw" or perms[3] != "p" or (len(parts) > 5 and parts[5] in _SKIP):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end))
    return out


def written_pages(ranges: Sequence[tuple[int, int]], pagemap: str = "/proc/self/pagemap") -> list[tuple[int, int]]:
    """Of ``ranges``, the pages present and mapped by this process alone (pagemap bits 63 and 56), merged into
    ``(start, length)`` runs: in a forked child, the pages it copied or wrote first."""
    import numpy as np

    present, exclusive = np.uint64(1 << 63), np.uint64(1 << 56)
    runs: list[tuple[int, int]] = []
    with open(pagemap, "rb") as f:
        for start, end in ranges:
            f.seek(start // PAGE * 8)
            try:
                entries = np.frombuffer(f.read((end - start) // PAGE * 8), dtype=np.uint64)
            except OSError:  # a mapping that cannot be read: skipped
                continue
            own = ((entries & present) != 0) & ((entries & exclusive) != 0)
            if not own.any():
                continue
            flags = np.concatenate(([False], own, [False])).astype(np.int8)
            edges = np.flatnonzero(np.diff(flags))  # start, stop (exclusive) of each run of owned pages
            for a, b in zip(edges[::2], edges[1::2]):
                runs.append((start + int(a) * PAGE, int(b - a) * PAGE))
    return runs


def learn(sample: Callable[[], object]) -> list[tuple[int, int]]:
    """The server's pages that ``sample()`` writes when run in a forked child (a probe, forked now): ``(start,
    length)`` runs of this process's private writable mappings. ``[]`` where it cannot be learned."""
    if not enabled():
        return []
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe: run the sample, report what it made its own, leave without any clean-up
        code = 1
        try:
            os.close(read)
            ranges = writable_ranges()
            sample()
            data = json.dumps(written_pages(ranges)).encode()
            with os.fdopen(write, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data or os.waitstatus_to_exitcode(status) != 0:
        return []
    try:
        return [(int(a), int(n)) for a, n in json.loads(data)]
    except (ValueError, TypeError):
        return []


def populate(runs: Sequence[tuple[int, int]]) -> int:
    """Copy the pages of ``runs`` into this process now (``madvise(MADV_POPULATE_WRITE)``); returns the bytes
    copied. A run the kernel refuses (unmapped since, a special mapping; every run on a kernel older than 5.14) is
    skipped."""
    if not runs or not enabled():
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    done = 0
    for start, length in runs:
        if madvise(start, length, MADV_POPULATE_WRITE) == 0:
            done += length
    return done
