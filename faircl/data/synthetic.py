"""Embedded default data, generated in code (seeded, no files): bias you can see, and its mitigation.

* :class:`BiasedFeatures` — Gaussian features where the attribute leaks into the features and is correlated with the
  label in train (like Moji's 0.8 stereotyping), independent of it in val/test.
* :class:`SynthBios` — template biographies (profession × gender, pronouns and names), stereotyped in train,
  balanced in val/test.
* :class:`ColoredDigits` — scikit-learn's bundled 8×8 digits coloured by the attribute; colour correlated with the
  digit in train, independent in val/test.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np
import torch

from faircl.data.base import FairDataModule, FairDataset
from faircl.data.generated_cache import cached_json
from faircl.data.text.base import RawSplit, TextDataModule, make_eda
from faircl.data.vocab import WordVocab


def biased_attributes(y: np.ndarray, num_groups: int, bias: float, rng: np.random.Generator) -> np.ndarray:
    """Attributes with ``P(a = y mod G | y) = bias`` and the rest spread uniformly over the other groups.

    ``bias = 1/G`` gives independence; ``bias = 1`` makes the attribute a deterministic function of the label.
    """
    if not 0.0 <= bias <= 1.0:
        raise ValueError(f"bias must be in [0, 1], got {bias}")
    stereo = y % num_groups
    if num_groups == 1:
        return np.zeros_like(y)
    other = (stereo + rng.integers(1, num_groups, size=len(y))) % num_groups
    return np.where(rng.random(len(y)) < bias, stereo, other).astype(np.int64)


def _split_sizes(n_train: int, n_val: int, n_test: int) -> dict[str, int]:
    sizes = {"train": n_train, "val": n_val, "test": n_test}
    for k, v in sizes.items():
        if v < 1:
            raise ValueError(f"n_{k} must be >= 1, got {v}")
    return sizes


class BiasedFeatures(FairDataModule):
    """Gaussian features with a label signal and an attribute "shortcut".

    ``x = class_sep · e_y + group_sep · e_a + noise`` over ``dim`` dimensions (class and group directions are random
    orthonormal vectors). In train, ``a`` follows ``y`` with probability ``bias``; in val/test ``a`` is uniform and
    independent of ``y``. A model that uses the shortcut has a group gap on the balanced test set.

    Args:
        n_train / n_val / n_test: rows per split.
        dim: feature dimension.
        num_classes: task classes.
        num_groups: attribute groups.
        bias: ``P(a = y mod G | y)`` in train (val/test: ``1/G``).
        class_sep: norm of the class signal (smaller = harder task).
        group_sep: norm of the attribute signal (larger = stronger leakage).
        noise: standard deviation of isotropic noise.
        view_noise: std of the Gaussian noise that makes the second view when ``two_views=True``.
    """

    def __init__(
        self,
        n_train: int = 4000,
        n_val: int = 1000,
        n_test: int = 2000,
        dim: int = 32,
        num_classes: int = 2,
        num_groups: int = 2,
        bias: float = 0.8,
        class_sep: float = 1.0,
        group_sep: float = 2.0,
        noise: float = 1.0,
        view_noise: float = 0.1,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if dim < num_classes + num_groups:
            raise ValueError(f"dim={dim} must be >= num_classes + num_groups = {num_classes + num_groups}")
        self.sizes = _split_sizes(n_train, n_val, n_test)
        self.dim, self._num_classes, self._num_groups = dim, num_classes, num_groups
        self.bias, self.class_sep, self.group_sep, self.noise, self.view_noise = (
            bias, class_sep, group_sep, noise, view_noise)
        self.class_names = [f"class{c}" for c in range(num_classes)]
        self.group_names = [f"group{g}" for g in range(num_groups)]

    @property
    def input_dim(self) -> int:
        return self.dim

    def load_splits(self) -> dict[str, FairDataset]:
        rng = np.random.default_rng(self.seed)
        basis, _ = np.linalg.qr(rng.standard_normal((self.dim, self.dim)))
        class_dirs = basis[:, : self._num_classes].T
        group_dirs = basis[:, self._num_classes: self._num_classes + self._num_groups].T
        out = {}
        for split, n in self.sizes.items():
            y = rng.integers(0, self._num_classes, size=n)
            bias = self.bias if split == "train" else 1.0 / self._num_groups
            a = biased_attributes(y, self._num_groups, bias, rng)
            x = (self.class_sep * class_dirs[y] + self.group_sep * group_dirs[a]
                 + self.noise * rng.standard_normal((n, self.dim)))
            out[split] = FairDataset(torch.tensor(x, dtype=torch.float32), y, a, num_classes=self._num_classes,
                                     num_groups=self._num_groups, source=f"BiasedFeatures[{split}]")
        return out

    def view_transform(self) -> Callable:
        std = self.view_noise

        def jitter(x: torch.Tensor) -> torch.Tensor:
            return x + std * torch.randn_like(x)

        return jitter


# --------------------------------------------------------------------------------------------------- SynthBios
_PROFESSIONS = {
    # profession: (stereotyped gender 0=male 1=female, topic words)
    "surgeon": (0, "operating theatre surgery incisions transplant anesthesia scalpel trauma cardiac"),
    "software_engineer": (0, "code software python systems backend compilers debugging cloud"),
    "architect": (0, "buildings design blueprints urban housing drafting structures concrete"),
    "pastor": (0, "church congregation sermons ministry faith scripture worship pastoral"),
    "nurse": (1, "patients ward care clinic bedside medication nursing shifts"),
    "dietitian": (1, "nutrition diet meals eating wellness obesity food nutrients"),
    "paralegal": (1, "legal filings attorneys documents litigation case law research"),
    "yoga_teacher": (1, "yoga breathing meditation poses studio mindfulness flexibility retreats"),
}
_SHARED = "work team people years experience community projects training clients time".split()
_NAMES = {
    0: "James John Robert Michael David William Thomas Daniel Mark Paul Steven Kevin Brian George Edward".split(),
    1: "Mary Patricia Jennifer Linda Susan Sarah Karen Nancy Lisa Emily Anna Laura Helen Grace Rachel".split(),
}
_PRON = {0: ("he", "his", "him"), 1: ("she", "her", "her")}
_TEMPLATES = [
    "{Name} is a {title} with {n} years of experience. {He} focuses on {t1} and {t2}, and {his} {s1} involves {t3}.",
    "{He} has worked in {t1} for {n} years. {Name} enjoys {t2} and {his} {s1} with {t3} and {s2}.",
    "As a {title}, {Name} spends {his} days on {t1}. {He} is known for {t2}, {s1} and {t3}.",
    "{Name} studied {t1} before becoming a {title}. Colleagues praise {him} for {t2} and {s2}.",
]


class SynthBios(FairDataModule):
    """Template biographies in the Bias in Bios format: predict the profession, protected attribute = gender.

    Each bio mentions the person's name and pronouns (the gender shortcut) and topic words of the profession (the
    task signal, diluted by ``topic_noise``: each topic word is replaced by a random other profession's word with
    that probability). In train, ``bias`` of each profession's bios have its stereotyped gender; val/test are
    gender-balanced. ``title_rate`` is the probability that the profession title itself appears in the text.

    Args:
        n_train / n_val / n_test: rows per split.
        bias: share of the stereotyped gender within each profession in train.
        topic_noise: probability that a topic word comes from another profession.
        title_rate: probability that the bio names the profession outright.
        representation: ``tokens`` (integer ids from a word vocabulary built on train, for ``bow``/``tokens``
            encoders) or ``text`` (raw strings, for Hugging Face encoders that tokenize).
        max_len: ids per bio with ``representation="tokens"``.
        eda_p: rate of each EDA edit (:class:`faircl.data.augment.EDA`: swap, deletion, and with ``eda_synonyms``
            synonym replacement / insertion from the offline WordNet) making the views when ``two_views=True``.
        eda_synonyms: include the WordNet synonym operations (they need the ``text`` extra).
    """

    def __init__(
        self,
        n_train: int = 3000,
        n_val: int = 800,
        n_test: int = 1600,
        bias: float = 0.8,
        topic_noise: float = 0.35,
        title_rate: float = 0.1,
        representation: str = "tokens",
        max_len: int = 48,
        eda_p: float = 0.1,
        eda_synonyms: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.eda_synonyms = eda_synonyms
        if representation not in ("tokens", "text"):
            raise ValueError(f"representation={representation!r} must be 'tokens' or 'text'")
        self.sizes = _split_sizes(n_train, n_val, n_test)
        self.bias, self.topic_noise, self.title_rate = bias, topic_noise, title_rate
        self.representation, self.max_len, self.eda_p = representation, max_len, eda_p
        self.class_names = list(_PROFESSIONS)
        self.group_names = ["male", "female"]
        self.vocab = None

    def _bio(self, prof: int, gender: int, rng: np.random.Generator) -> str:
        name = self.class_names[prof]
        topics = _PROFESSIONS[name][1].split()

        def topic() -> str:
            if rng.random() < self.topic_noise:
                other = self.class_names[rng.integers(len(self.class_names))]
                return str(rng.choice(_PROFESSIONS[other][1].split()))
            return str(rng.choice(topics))

        he, his, him = _PRON[gender]
        title = name.replace("_", " ") if rng.random() < self.title_rate else "professional"
        text = _TEMPLATES[rng.integers(len(_TEMPLATES))].format(
            Name=str(rng.choice(_NAMES[gender])), title=title, n=int(rng.integers(2, 30)), He=he.capitalize(),
            his=his, him=him, t1=topic(), t2=topic(), t3=topic(), s1=str(rng.choice(_SHARED)),
            s2=str(rng.choice(_SHARED)))
        return text

    def generate(self) -> dict[str, tuple[list[str], list[int], list[int]]]:
        """The bios, professions and genders of every split, drawn from ``seed`` (the same for every run)."""
        rng = np.random.default_rng(self.seed)
        stereo = np.array([_PROFESSIONS[p][0] for p in self.class_names])
        raw = {}
        for split, n in self.sizes.items():
            y = rng.integers(0, len(self.class_names), size=n)
            bias = self.bias if split == "train" else 0.5
            a = np.where(rng.random(n) < bias, stereo[y], 1 - stereo[y])
            raw[split] = ([self._bio(int(p), int(g), rng) for p, g in zip(y, a)], y.tolist(), a.tolist())
        return raw

    def load_splits(self) -> dict[str, FairDataset]:
        # built once per set of arguments, then read from disk by every run (faircl.data.generated_cache)
        spec = {"class": f"{type(self).__module__}.{type(self).__qualname__}", "sizes": self.sizes,
                "bias": self.bias, "topic_noise": self.topic_noise, "title_rate": self.title_rate, "seed": self.seed}
        stored = cached_json("synthbios", spec, self.generate, code=(inspect.getfile(type(self)), __file__))
        raw = {split: (texts, np.asarray(y, dtype=np.int64), np.asarray(a, dtype=np.int64))
               for split, (texts, y, a) in stored.items()}
        transform = None
        if self.representation == "tokens":
            self.vocab = transform = WordVocab(raw["train"][0], max_len=self.max_len)
        return {
            split: FairDataset(texts, y, a, num_classes=len(self.class_names), num_groups=2, transform=transform,
                               source=f"SynthBios[{split}]")
            for split, (texts, y, a) in raw.items()
        }

    @property
    def input_dim(self) -> int:
        return len(self.vocab) if self.representation == "tokens" else 0

    @property
    def input_kind(self) -> str:
        return self.representation

    def view_transform(self) -> Callable:
        return make_eda(self.eda_p, self.seed, synonyms=self.eda_synonyms)


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
        if self.task == "stereotype":
            return ["male-stereotyped profession", "female-stereotyped profession"]
        return list(_PROFESSIONS)

    def load_raw(self) -> dict[str, RawSplit]:
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


# --------------------------------------------------------------------------------------------------- ColoredDigits
_PALETTE = np.array([[1.0, 0.15, 0.15], [0.15, 1.0, 0.15], [0.2, 0.4, 1.0], [1.0, 1.0, 0.1], [1.0, 0.2, 1.0]])


class ColoredDigits(FairDataModule):
    """scikit-learn's 1,797 8×8 digits, coloured by the protected attribute (colour id).

    In train the colour equals ``digit mod G`` with probability ``bias``; in val/test it is uniform and independent.
    Images are ``[3, size, size]`` float tensors in ``[0, 1]`` (nearest upsampling of the 8×8 digit).

    Args:
        num_groups: number of colours (2–5).
        bias: ``P(colour = digit mod G)`` in train.
        size: image side (8 or a multiple of 8).
        binary_task: predict ``digit >= 5`` instead of the 10 digits.
        val_fraction / test_fraction: split shares (stratified by digit, seeded).
        view_scale: strength of the random-crop / noise augmentation of the second view.
    """

    def __init__(
        self,
        num_groups: int = 2,
        bias: float = 0.9,
        size: int = 16,
        binary_task: bool = False,
        val_fraction: float = 0.2,
        test_fraction: float = 0.25,
        view_scale: float = 0.2,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if not 2 <= num_groups <= len(_PALETTE):
            raise ValueError(f"num_groups must be in [2, {len(_PALETTE)}], got {num_groups}")
        if size % 8:
            raise ValueError(f"size must be a multiple of 8, got {size}")
        self._num_groups, self.bias, self.size, self.binary_task = num_groups, bias, size, binary_task
        self.val_fraction, self.test_fraction, self.view_scale = val_fraction, test_fraction, view_scale
        self.class_names = ["<5", ">=5"] if binary_task else [str(d) for d in range(10)]
        self.group_names = ["red", "green", "blue", "yellow", "magenta"][:num_groups]

    @property
    def input_dim(self) -> int:
        return 3

    @property
    def input_kind(self) -> str:
        return "images"

    def digit_splits(self) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], np.random.Generator]:
        """The 8 × 8 digit images (``[n, 8, 8]`` in [0, 1]), their digits, the row ids of each split (test, val,
        train, drawn with ``seed``) and the generator that goes on to draw the colours."""
        from sklearn.datasets import load_digits

        digits = load_digits()
        img = digits.images.astype(np.float32) / 16.0
        digit = digits.target.astype(np.int64)
        rng = np.random.default_rng(self.seed)
        order = rng.permutation(len(digit))
        n_test = int(round(self.test_fraction * len(order)))
        n_val = int(round(self.val_fraction * len(order)))
        parts = {"test": order[:n_test], "val": order[n_test:n_test + n_val], "train": order[n_test + n_val:]}
        return img, digit, parts, rng

    def split_attributes(self, split: str, digit: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The colour ids of a split's rows: ``bias`` toward the digit's colour in train, uniform elsewhere."""
        bias = self.bias if split == "train" else 1.0 / self._num_groups
        return biased_attributes(digit, self._num_groups, bias, rng)

    def load_splits(self) -> dict[str, FairDataset]:
        img, digit, parts, rng = self.digit_splits()
        rep = self.size // 8
        out = {}
        for split, rows in parts.items():
            d = digit[rows]
            y = (d >= 5).astype(np.int64) if self.binary_task else d
            a = self.split_attributes(split, d, y, rng)
            gray = np.kron(img[rows], np.ones((rep, rep), dtype=np.float32))  # [n, size, size]
            color = _PALETTE[a].astype(np.float32)  # [n, 3]
            x = gray[:, None, :, :] * color[:, :, None, None]
            out[split] = FairDataset(torch.from_numpy(np.ascontiguousarray(x)), y, a,
                                     num_classes=len(self.class_names), num_groups=self._num_groups,
                                     source=f"{type(self).__name__}[{split}]")
        return out

    def view_transform(self) -> Callable:
        return _ShiftNoise(self.view_scale)


class _ShiftNoise:
    """Random translation (up to ``scale`` of the side) + Gaussian noise + brightness; picklable, no torchvision."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        side = x.shape[-1]
        m = max(1, int(self.scale * side))
        dx, dy = (int(v) for v in torch.randint(-m, m + 1, (2,)))
        x = torch.roll(x, shifts=(dy, dx), dims=(-2, -1))
        x = x * (1 + self.scale * (torch.rand(1) - 0.5)) + 0.05 * self.scale * torch.randn_like(x)
        return x.clamp(0, 1)
