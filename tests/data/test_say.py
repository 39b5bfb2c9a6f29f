"""Datamodule messages are printed once per job (global rank 0), not once per DDP process."""

from __future__ import annotations

from lightning.pytorch.utilities import rank_zero_only

from faircl.data.summary import is_rank_zero, say


def test_say_prints_on_rank_zero_only(capsys, monkeypatch):
    monkeypatch.setattr(rank_zero_only, "rank", 0)
    assert is_rank_zero()
    say("HateSpeech: English_train.tsv not found")
    assert capsys.readouterr().out == "HateSpeech: English_train.tsv not found\n"
    monkeypatch.setattr(rank_zero_only, "rank", 1)
    assert not is_rank_zero()
    say("HateSpeech: English_train.tsv not found")
    assert capsys.readouterr().out == ""
