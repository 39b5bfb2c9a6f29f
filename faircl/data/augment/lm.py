"""Language-model augmenters (masked-LM substitution, back translation) over local model directories (nlpaug)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from faircl.data.augment.base import _global_rngs, _Seeded

__all__ = ["ModelDirError", "ContextualLMAug", "BackTranslationAug"]


class ModelDirError(FileNotFoundError):
    """A model directory is missing or incomplete; the message says what is missing and how to provide it."""


_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
              "sentencepiece.bpe.model", "source.spm")


def _check_model_dir(path: str | os.PathLike | None, who: str, argument: str, kind: str) -> tuple[Path, dict]:
    how = (
        f"{who} loads {kind} from a local directory only (no download). Make one on a machine with network, e.g. "
        f"`AutoModel...from_pretrained(name).save_pretrained(DIR)` and `AutoTokenizer.from_pretrained(name)"
        f".save_pretrained(DIR)`, copy DIR here and pass {argument}=DIR."
    )
    if path is None or str(path) == "":
        raise ModelDirError(f"{who}: {argument} is not set. {how}")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ModelDirError(f"{who}: {argument}={str(p)!r} does not exist or is not a directory. {how}")
    missing = []
    if not (p / "config.json").is_file():
        missing.append("config.json")
    if not any((p / f).is_file() for f in _WEIGHTS):
        missing.append("weights (" + " or ".join(_WEIGHTS[:2]) + ")")
    if not any((p / f).is_file() for f in _TOKENIZER):
        missing.append("tokenizer files (" + " or ".join(_TOKENIZER[:3]) + ")")
    if missing:
        raise ModelDirError(
            f"{who}: {argument}={str(p)!r} is not a model directory: missing {', '.join(missing)}. {how}"
        )
    try:
        config = json.loads((p / "config.json").read_text())
    except (OSError, ValueError) as err:
        raise ModelDirError(f"{who}: {argument}={str(p)!r}: config.json is not valid JSON ({err}). {how}") from err
    return p.resolve(), config


class ContextualLMAug(_Seeded):
    """Word substitution or insertion by a masked language model (Kobayashi 2018; "CLM" in Chi et al. 2022).

    Wraps nlpaug's ``ContextualWordEmbsAug`` (its transformers ``fill-mask`` pipeline) over a local directory.

    Args:
        model_dir: directory of a BERT / DistilBERT / RoBERTa / BART masked-LM checkpoint with its tokenizer.
        action: ``"substitute"`` or ``"insert"``.
        aug_p: fraction of words changed (0.1 in Chi et al.).
        top_k: candidates per masked position.
        device: torch device string.
        seed: seed (see the module docstring); python/numpy/torch global states are restored after each call.

    Raises:
        ModelDirError: the directory is absent or lacks config, weights or tokenizer.
        ValueError: the checkpoint's ``model_type`` is not one nlpaug supports.
    """

    SUPPORTED = ("bert", "distilbert", "roberta", "bart")

    def __init__(
        self,
        model_dir: str | os.PathLike,
        action: str = "substitute",
        aug_p: float = 0.1,
        top_k: int = 20,
        device: str = "cpu",
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)
        path, config = _check_model_dir(model_dir, "ContextualLMAug", "model_dir", "a masked language model")
        model_type = str(config.get("model_type", ""))
        if model_type not in self.SUPPORTED:
            raise ValueError(
                f"ContextualLMAug: model_dir={str(path)!r} holds model_type={model_type!r}; "
                f"nlpaug supports {', '.join(self.SUPPORTED)}"
            )
        if action not in ("substitute", "insert"):
            raise ValueError(f"action must be 'substitute' or 'insert', got {action!r}")
        import nlpaug.augmenter.word as naw

        self.model_dir = path
        self.aug = naw.ContextualWordEmbsAug(
            model_path=str(path), model_type=model_type, action=action, aug_p=aug_p, top_k=top_k, device=device,
            force_reload=True, use_custom_api=False,  # nlpaug's own BERT wrappers fail on transformers >= 5
        )

    def __call__(self, text: str | list[str]) -> str | list[str]:
        with _global_rngs(self._random().getrandbits(63)):
            out = self.aug.augment(text)
        return out[0] if isinstance(text, str) else out


class BackTranslationAug(_Seeded):
    """Back translation (Edunov et al. 2018): translate to a pivot language and back (nlpaug).

    Args:
        model_dir_fwd: local seq2seq translation model directory, source → pivot (e.g. a saved wmt19-en-de).
        model_dir_back: local seq2seq model directory, pivot → source.
        device: torch device string.
        max_length: maximum generated length (default: the models' own).
        batch_size: texts per generation batch.
        seed: seed (see the module docstring).

    Raises:
        ModelDirError: a directory is absent or lacks config, weights or tokenizer.
    """

    def __init__(
        self,
        model_dir_fwd: str | os.PathLike,
        model_dir_back: str | os.PathLike,
        device: str = "cpu",
        max_length: int | None = None,
        batch_size: int = 32,
        seed: int | None = None,
    ) -> None:
        super().__init__(seed)
        fwd, _ = _check_model_dir(model_dir_fwd, "BackTranslationAug", "model_dir_fwd", "a translation model")
        back, _ = _check_model_dir(model_dir_back, "BackTranslationAug", "model_dir_back", "a translation model")
        import nlpaug.augmenter.word as naw

        self.model_dirs = (fwd, back)
        self.aug = naw.BackTranslationAug(
            from_model_name=str(fwd), to_model_name=str(back), device=device, max_length=max_length,
            batch_size=batch_size, force_reload=True,
        )

    def __call__(self, text: str | list[str]) -> str | list[str]:
        with _global_rngs(self._random().getrandbits(63)):
            out = self.aug.augment(text)
        return out[0] if isinstance(text, str) else out
