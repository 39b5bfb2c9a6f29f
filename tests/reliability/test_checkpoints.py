"""Checkpoints: no code runs from a crafted file, corrupt files give one line naming the file, writes are atomic."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from faircl.checkpoints import AtomicCheckpointIO, CheckpointError, check_checkpoint, load_checkpoint
from faircl.eval.findml import load_model
from faircl.methods.ce import CE
from faircl.methods.inlp import INLP


class _Evil:
    def __reduce__(self):
        return (exec, ("import pathlib, os; pathlib.Path(os.environ['EVIL_FLAG']).write_text('ran')",))


@pytest.fixture()
def evil_ckpt(tmp_path, monkeypatch):
    flag = tmp_path / "ran.txt"
    monkeypatch.setenv("EVIL_FLAG", str(flag))
    path = tmp_path / "evil.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {"x": _Evil()}}, path)
    return path, flag


def test_crafted_checkpoint_runs_no_code(evil_ckpt):
    path, flag = evil_ckpt
    with pytest.raises(CheckpointError, match="evil.ckpt.*not plain") as err:
        INLP(input_dim=8, encoder_checkpoint=str(path))
    assert "\n" not in str(err.value)
    with pytest.raises(CheckpointError, match="evil.ckpt"):
        load_model(path, {})
    with pytest.raises(CheckpointError, match="evil.ckpt"):
        AtomicCheckpointIO().load_checkpoint(path)
    assert not flag.exists()


def test_inlp_loads_a_plain_checkpoint(tmp_path):
    ce = CE(num_classes=2, num_groups=2, input_dim=8)
    torch.save({"state_dict": ce.state_dict(), "hyper_parameters": {"lr": 1e-3}}, tmp_path / "ce.ckpt")
    m = INLP(input_dim=8, encoder_checkpoint=str(tmp_path / "ce.ckpt"))
    for (k, v), (k2, v2) in zip(ce.encoder.state_dict().items(), m.encoder.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)


def _corrupt_files(tmp_path):
    good = tmp_path / "good.ckpt"
    torch.save({"state_dict": {"w": torch.randn(64, 64)}}, good)
    data = good.read_bytes()
    legacy = tmp_path / "legacy.ckpt"
    torch.save({"state_dict": {"w": torch.randn(64, 64)}}, legacy, _use_new_zipfile_serialization=False)
    files = {
        "empty.ckpt": (b"", "empty"),
        "truncated.ckpt": (data[: len(data) // 2], "truncated"),
        "random.ckpt": (os.urandom(4096), "not a PyTorch checkpoint"),
        "text.ckpt": (b"hello world\n" * 10, "not a PyTorch checkpoint"),
        "legacy_cut.ckpt": (legacy.read_bytes()[:200], "truncated or corrupt"),
        "list.ckpt": (None, "expected a dict"),
    }
    out = {}
    for name, (content, why) in files.items():
        p = tmp_path / name
        if content is None:
            torch.save([1, 2], p)
        else:
            p.write_bytes(content)
        out[p] = why
    return good, out


def test_corrupt_checkpoints_give_one_line_naming_the_file(tmp_path):
    good, files = _corrupt_files(tmp_path)
    assert torch.equal(load_checkpoint(good)["state_dict"]["w"], torch.load(good)["state_dict"]["w"])
    for path, why in files.items():
        for fn in (load_checkpoint, check_checkpoint, lambda p: INLP(input_dim=8, encoder_checkpoint=str(p))):
            with pytest.raises(CheckpointError) as err:
                fn(path)
            msg = str(err.value)
            assert path.name in msg and why in msg and "\n" not in msg, msg
    with pytest.raises(CheckpointError, match="file not found"):
        load_checkpoint(tmp_path / "missing.ckpt")
    torch.save({"epoch": 1}, tmp_path / "nostate.ckpt")
    with pytest.raises(CheckpointError, match="no 'state_dict'"):
        check_checkpoint(tmp_path / "nostate.ckpt")


def test_atomic_save_survives_a_crash_during_the_write(tmp_path, monkeypatch):
    io = AtomicCheckpointIO()
    target = tmp_path / "last.ckpt"
    io.save_checkpoint({"state_dict": {"w": torch.zeros(3)}, "epoch": 1}, target)

    def crash(checkpoint, fh):
        fh.write(b"PK\x03\x04partial")
        raise KeyboardInterrupt  # e.g. SIGINT in the middle of the write

    monkeypatch.setattr(AtomicCheckpointIO, "_write", staticmethod(crash))
    with pytest.raises(KeyboardInterrupt):
        io.save_checkpoint({"state_dict": {"w": torch.ones(3)}, "epoch": 2}, target)
    assert io.load_checkpoint(target)["epoch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # the partial temp file is removed


def test_atomic_save_survives_a_hard_kill_during_the_write(tmp_path):
    """A process that dies (``os._exit``, like SIGKILL) half-way through writing leaves the old checkpoint intact."""
    target = tmp_path / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.zeros(3)}, "epoch": 1}, target)
    script = textwrap.dedent(f"""
        import os, torch
        from faircl.checkpoints import AtomicCheckpointIO

        def die(checkpoint, fh):
            fh.write(b"PK\\x03\\x04" + os.urandom(1000))
            fh.flush()
            os._exit(9)

        AtomicCheckpointIO._write = staticmethod(die)
        AtomicCheckpointIO().save_checkpoint({{"state_dict": {{"w": torch.ones(3)}}, "epoch": 2}}, {str(target)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    assert load_checkpoint(target)["epoch"] == 1
    assert torch.equal(load_checkpoint(target)["state_dict"]["w"], torch.zeros(3))
    # the plain torch.save the plugin replaces would have left a truncated file in place:
    with open(target, "wb") as fh:
        fh.write(b"PK\x03\x04" + os.urandom(1000))
    with pytest.raises(CheckpointError, match="last.ckpt.*truncated"):
        load_checkpoint(target)


def test_weights_only_false_is_refused(tmp_path):
    target = tmp_path / "a.ckpt"
    AtomicCheckpointIO().save_checkpoint({"state_dict": {}}, target)
    with pytest.raises(CheckpointError, match="weights_only=False"):
        AtomicCheckpointIO().load_checkpoint(target, weights_only=False)
