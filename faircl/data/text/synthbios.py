"""SynthBios's template biographies through the text pipeline (raw strings, token ids or cached frozen features)."""

from __future__ import annotations

import numpy as np

from faircl.data.text.base import RawSplit, TextDataModule

__all__ = ["SynthBiosText", "SYNTHBIOS_TASKS"]

#: ``profession``: the 8 professions; ``stereotype``: two classes, the gender each profession is stereotyped with
SYNTHBIOS_TASKS = ("profession", "stereotype")


class SynthBiosText(TextDataModule):
    """The bios of :class:`~faircl.data.synthetic.SynthBios` (same generator, same rows for the same ``seed``) as a
    :class:`~faircl.data.text.base.TextDataModule`: with ``features="frozen"`` each bio is encoded once by a frozen
    Hugging Face encoder (the packaged all-MiniLM-L6-v2 by default; cached on disk, and so are the EDA views of the
    training bios), the setting of Shen et al.'s Embed + MLP.

    ``task="stereotype"`` groups the professions by the gender they are stereotyped with: two classes, and in train
    ``bias`` of the rows have attribute = label (validation and test: attribute independent of the label), the text
    benchmark's main protocol.

    Args:
        n_train / n_val / n_test: rows per split.
        bias: share of the stereotyped gender within each profession in train.
        topic_noise: probability that a topic word comes from another profession.
        title_rate: probability that the bio names the profession outright.
        task: ``profession`` (8 classes) or ``stereotype`` (2 classes: the professions' stereotyped gender).
        **kwargs: :class:`~faircl.data.text.base.TextDataModule` arguments (``features="frozen"``, ``encoder_dir``,
            ``frozen_views``, ``representation``...) and :class:`~faircl.data.base.FairDataModule` arguments.
    """

    def __init__(self, n_train: int = 3000, n_val: int = 800, n_test: int = 1600, bias: float = 0.8,
                 topic_noise: float = 0.35, title_rate: float = 0.1, task: str = "profession", **kwargs) -> None:
        if task not in SYNTHBIOS_TASKS:
            raise ValueError(f"task={task!r} must be one of {SYNTHBIOS_TASKS}")
        if kwargs.get("data_dir") is not None:
            raise ValueError("SynthBiosText generates its bios: it takes no data_dir")
        kwargs.pop("data_dir", None)
        super().__init__(**kwargs)
        self.n_train, self.n_val, self.n_test = n_train, n_val, n_test
        self.bias, self.topic_noise, self.title_rate, self.task = bias, topic_noise, title_rate, task
        self.group_names = ["male", "female"]
        self.class_names = self._class_names()

    def _class_names(self) -> list[str]:
        from faircl.data.synthetic import _PROFESSIONS

        if self.task == "stereotype":
            return ["male-stereotyped profession", "female-stereotyped profession"]
        return list(_PROFESSIONS)

    def load_raw(self) -> dict[str, RawSplit]:
        from faircl.data.synthetic import _PROFESSIONS, SynthBios

        gen = SynthBios(n_train=self.n_train, n_val=self.n_val, n_test=self.n_test, bias=self.bias,
                        topic_noise=self.topic_noise, title_rate=self.title_rate, representation="text",
                        seed=self.seed)
        stereo = np.array([_PROFESSIONS[p][0] for p in gen.class_names], dtype=np.int64)
        out = {}
        for split, ds in gen.load_splits().items():
            y = ds.y.numpy().astype(np.int64)
            if self.task == "stereotype":
                y = stereo[y]
            out[split] = RawSplit([str(t) for t in ds.x], y, ds.a.numpy().astype(np.int64),
                                  f"SynthBiosText[{split}]")
        return out
