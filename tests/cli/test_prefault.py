"""Copy-on-write ahead of a run (:mod:`faircl.cli.prefault`), on planted pages of a private mapping: a forked child's
written pages are found exactly, a probe learns what its sample wrote, and ``populate`` makes pages a child's own
without changing them."""

from __future__ import annotations

import ctypes
import mmap
import os

import pytest

from faircl.cli import prefault

pytestmark = pytest.mark.skipif(not prefault.enabled(), reason="needs Linux with /proc/self/pagemap")

PAGE = prefault.PAGE
N = 64


def _mapping() -> tuple[mmap.mmap, int]:
    """A private anonymous mapping of N pages, pages 0..N/2 written here (present, this process's own), the rest
    never touched."""
    m = mmap.mmap(-1, N * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for i in range(N // 2):
        m[i * PAGE] = 1 + i % 200
    return m, ctypes.addressof(ctypes.c_char.from_buffer(m))


def _in_child(fn) -> object:
    """``fn()`` in a forked child; its return value (a repr-able literal) comes back through a pipe."""
    import ast

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            with os.fdopen(write, "w") as out:
                out.write(repr(fn()))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and text
    return ast.literal_eval(text)


def test_a_forked_child_finds_exactly_the_shared_pages_it_wrote():
    m, base = _mapping()
    whole = [(base, base + N * PAGE)]

    def child():
        before = prefault.written_pages(whole)
        m[3 * PAGE] = 7  # copy-on-write: pages 3, 4 and 10 become the child's own
        m[4 * PAGE + 100] = 7
        m[10 * PAGE] = m[10 * PAGE]  # the same value: still a write, still a copy
        _ = m[12 * PAGE]  # a read copies nothing
        _ = m[40 * PAGE]  # a page never touched, read: no page of its own to copy
        return before, prefault.written_pages(whole)

    before, after = _in_child(child)
    assert before == []  # right after the fork every page is shared
    assert after == [(base + 3 * PAGE, 2 * PAGE), (base + 10 * PAGE, PAGE)]
    assert prefault.written_pages(whole) == [(base, N // 2 * PAGE)]  # here: the pages written before the fork
    m.close()


def test_the_probe_learns_what_its_sample_wrote_and_a_failing_sample_learns_nothing():
    m, base = _mapping()

    def sample():
        for i in (5, 6, 7, 20):
            m[i * PAGE] = 9

    learned = prefault.learn(sample)
    mine = [(a, n) for a, n in learned if base <= a < base + N * PAGE]
    assert mine == [(base + 5 * PAGE, 3 * PAGE), (base + 20 * PAGE, PAGE)]
    assert m[5 * PAGE] == 1 + 5 % 200  # the probe's writes stay in the probe

    def fails():
        raise RuntimeError("planted")

    assert prefault.learn(fails) == []
    m.close()


def test_populate_makes_the_pages_the_childs_own_and_leaves_them_unchanged(monkeypatch):
    if not prefault.supported():
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux < 5.14)")
    m, base = _mapping()
    whole = [(base, base + N * PAGE)]
    runs = [(base + 2 * PAGE, 3 * PAGE), (base + 30 * PAGE, PAGE), (1 << 46, PAGE)]  # the last: not mapped, skipped

    def child():
        copied = prefault.populate(runs)
        values = [m[i * PAGE] for i in range(N // 2)]
        return copied, prefault.written_pages(whole), values

    copied, own, values = _in_child(child)
    assert copied == 4 * PAGE
    assert own == [(base + 2 * PAGE, 3 * PAGE), (base + 30 * PAGE, PAGE)]
    assert values == [1 + i % 200 for i in range(N // 2)]
    monkeypatch.setenv("FAIRCL_NO_PREFAULT", "1")
    assert not prefault.enabled() and not prefault.supported()
    assert prefault.populate(runs) == 0 and prefault.learn(lambda: None) == []
    m.close()


def test_writable_ranges_reads_private_writable_mappings_only(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/python\n"
                    "00651000-00652000 rw-p 00051000 08:02 173521 /usr/bin/python\n"
                    "00652000-00655000 rw-p 00000000 00:00 0 \n"
                    "7f0000000000-7f0000001000 rw-s 00000000 00:05 1 /dev/zero (deleted)\n"
                    "7ffd1e000000-7ffd1e021000 rw-p 00000000 00:00 0 [stack]\n"
                    "01aa0000-01ab0000 rw-p 00000000 00:00 0 [heap]\n")
    assert prefault.writable_ranges(str(maps)) == [(0x651000, 0x652000), (0x652000, 0x655000),
                                                   (0x1AA0000, 0x1AB0000)]
