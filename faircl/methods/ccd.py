"""CCD: content-conditional debiasing of a text encoder (CCD paper, eqs. 2–4).

Trained on counterfactual tuples (:class:`faircl.data.counterfactual.tuples.CounterfactualTuples`): for a tuple
``(S^{a_1}, …, S^{a_G}, S^n)`` the encoder ``f`` is pulled towards *equal* kernel similarity of every attribute
version to the neutral one (``L_bias``) while the neutral embedding stays where the original encoder put it
(``L_rep``):

    L = L_bias + β · L_rep,
    L_bias = Σ_i Σ_{j≠i} |k(f(S^{a_i}), f(S^n)) − k(f(S^{a_j}), f(S^n))|,  k(u, v) = exp(−‖u − v‖² / (2ρ²)),
    L_rep  = ‖f(S^n) − f_orig(S^n)‖.

Choice of ρ. The paper sets "ρ = the variance of the distance over the training data". Taken literally the kernel
vanishes: for normalised all-MiniLM-L6-v2 embeddings of CDA tuples (GAP sentences) the attribute-to-neutral distances
have median 0.45 and variance 0.042, and ``ρ = 0.042`` gives ``k = exp(−0.45² / (2 · 0.042²)) ≈ 1e−25`` at the
median, so ``L_bias`` and its gradient are numerically zero (and underflow to exactly 0 a little further out).
The default here, ``rho_estimate="median"``, sets ρ to the median of ``‖f_orig(S^{a_g}) − f_orig(S^n)‖`` over the
training tuples (the median heuristic of Gaussian kernels): typical tuples then sit near ``d = ρ``, where
``|∂k/∂d| = (d/ρ²)·exp(−d²/2ρ²)`` is largest. ``std`` (the spread, i.e. the standard deviation of the distances),
``mean``, ``variance`` (the literal paper value, for reproduction) or a fixed ``rho`` are also offered. ρ is computed
once at fit start (unless given) and stored in a buffer, so checkpoints and resumes keep it.

Validation runs every ``val_check_interval`` trainer steps (the paper: every 500, keeping the best). The best weights
are Lightning's best checkpoint: the method's checkpoint policy
(:meth:`~faircl.methods.base.FairModule.configure_callbacks`: monitor ``val/loss``, mode ``min``) or the
``ModelCheckpoint`` a config names keeps it, ``faircl test --ckpt_path best`` (``trainer.test(ckpt_path="best")``)
evaluates it, and with ``restore_best`` the end of ``fit`` loads it back into the module (from
``trainer.checkpoint_callback.best_model_path``). :meth:`CCD.save_pretrained` exports the debiased encoder as a
Hugging Face model directory (also a sentence-transformers directory).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Literal

import torch
from lightning.pytorch.utilities import rank_zero_info
from torch.nn import functional as F
from torchmetrics import MeanMetric

from faircl._checks import check_choice, check_positive
from faircl.checkpoints import load_checkpoint
from faircl.losses.ccd import ccd_bias_loss, ccd_rep_loss
from faircl.methods.base import FairModule
from faircl.metrics import CCEDGap
from faircl.models.encoders import HFTextEncoder

RHO_ESTIMATES = ("median", "std", "mean", "variance")


class CCD(FairModule):
    """Content-conditional debiasing of a text encoder; no classifier (the product is the encoder itself).

    Batches come from :class:`~faircl.data.counterfactual.tuples.CounterfactualTuples`: ``batch["x"]`` is a list of ``G + 1`` lists
    of ``B`` strings (the G attribute versions, then the neutral one).

    Args:
        beta: weight β of ``L_rep`` (paper: 1; ablation 0, 0.5, 1, 1.5).
        rho: fixed kernel bandwidth ρ; ``None`` estimates it at fit start (``rho_estimate``).
        rho_estimate: ``median`` (default) | ``std`` | ``mean`` | ``variance`` of the attribute-to-neutral
            distances of the original encoder over (up to ``rho_max_rows``) training tuples.
        rho_max_rows: at most this many training tuples to estimate ρ.
        normalize: L2-normalise the embeddings before the losses and metrics (sentence-transformers models such
            as all-MiniLM-L6-v2 are used normalised); the export then adds a Normalize module.
        restore_best: at the end of ``fit``, load the weights of the trainer's best checkpoint (lowest ``val/loss``
            unless a checkpoint callback or ``monitor`` chooses another metric); without a checkpoint callback
            (``enable_checkpointing=False``) no best is kept and the module keeps the last step's weights.
        encoder: a registered text encoder (default ``hf``: a local Hugging Face model; ``encoder_kwargs.model_dir``
            ``None`` = the offline all-MiniLM-L6-v2).
        lr: Adam learning rate (paper: 5e-5).
        **kwargs: the other :class:`~faircl.methods.base.FairModule` arguments.
    """

    default_monitor = ("val/loss", "min")  # the best checkpoint: lowest validation loss
    supports_grad_cache = False  # its steps embed whole counterfactual tuples

    input_kinds = ("tuples",)  # counterfactual tuples only

    def __init__(
        self,
        beta: float = 1.0,
        rho: float | None = None,
        rho_estimate: Literal["median", "std", "mean", "variance"] = "median",
        rho_max_rows: int = 1024,
        normalize: bool = False,
        restore_best: bool = True,
        num_classes: int = 2,
        num_groups: int = 2,
        input_dim: int = 0,
        encoder: str = "hf",
        encoder_kwargs: dict[str, Any] | None = None,
        lr: float = 5e-5,
        optimizer: str = "adam",
        leakage: bool = False,
        **kwargs: Any,
    ) -> None:
        check_choice("rho_estimate", rho_estimate, RHO_ESTIMATES)
        if rho is not None:
            check_positive("rho", rho)
        check_positive("beta", beta, strict=False)
        check_positive("num_groups", num_groups, minimum=2)  # tuples hold at least 2 attribute versions
        super().__init__(num_classes=num_classes, num_groups=num_groups, input_dim=input_dim, encoder=encoder,
                         encoder_kwargs=encoder_kwargs, lr=lr, optimizer=optimizer, leakage=leakage, **kwargs)
        self.beta, self.normalize, self.restore_best = float(beta), normalize, restore_best
        self.rho_estimate, self.rho_max_rows = rho_estimate, rho_max_rows
        # the frozen copy f_orig of the original encoder (for L_rep); no classifier
        self.classifier = None
        self.encoder_orig = copy.deepcopy(self.encoder)
        self.freeze_module(self.encoder_orig)
        self.register_buffer("rho", torch.tensor(float(rho) if rho is not None else float("nan")))
        self.register_buffer("best_val_loss", torch.tensor(float("inf")))
        self.val_history: list[tuple[int, float]] = []
        self.val_cced, self.test_cced, self.test_cced_orig = CCEDGap(), CCEDGap(), CCEDGap()
        self.val_means = torch.nn.ModuleDict({k: MeanMetric() for k in ("loss", "bias", "rep")})
        self.test_means = torch.nn.ModuleDict({k: MeanMetric() for k in ("loss", "bias", "rep")})
        self.test_dist_mean = torch.nn.ModuleList([MeanMetric() for _ in range(num_groups)])

    # ------------------------------------------------------------------ model
    def embed(self, texts: list[str] | tuple[str, ...], original: bool = False) -> torch.Tensor:
        """Embeddings ``[B, d]`` of a list of strings by the trained (or the frozen original) encoder."""
        enc = self.encoder_orig if original else self.encoder
        h = enc(list(texts))
        return F.normalize(h.float(), dim=-1) if self.normalize else h

    def encode(self, x: Any) -> torch.Tensor:
        """``x`` (list of strings) → ``h`` ``[B, d]``."""
        return self.embed(x)

    def _check_tuples(self, x: Any) -> list[list[str]]:
        if not isinstance(x, (list, tuple)) or len(x) != self.num_groups + 1 or not all(
                isinstance(v, (list, tuple)) for v in x):
            size = len(x) if hasattr(x, "__len__") else "?"
            raise TypeError(f"CCD expects batch['x'] = {self.num_groups + 1} lists of strings (the "
                            f"{self.num_groups} attribute versions, then the neutral one), e.g. from "
                            f"CounterfactualTuples; got {type(x).__name__} of length {size}")
        return [list(v) for v in x]

    def embed_tuples(self, x: Any, original: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """One encoder pass over all versions: ``(attribute [G, B, d], neutral [B, d])``."""
        versions = self._check_tuples(x)
        b = len(versions[0])
        flat = [s for v in versions for s in v]
        h = self.embed(flat, original=original).reshape(len(versions), b, -1)
        return h[:-1], h[-1]

    def step_outputs(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """``{"attribute": [B, G, d], "neutral": [B, d]}`` embeddings of a batch of tuples."""
        attr, neutral = self.embed_tuples(batch["x"])
        return {"attribute": attr.transpose(0, 1), "neutral": neutral}

    def losses(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``L_bias``, ``L_rep`` and ``loss = L_bias + β·L_rep`` of a batch of tuples (eqs. 2–4)."""
        if not torch.isfinite(self.rho):
            raise RuntimeError("CCD: ρ is not set; fit() estimates it at start, or pass rho=...")
        with torch.no_grad():
            neutral_orig = self.embed(batch["x"][-1], original=True)
        bias = ccd_bias_loss(out["attribute"].transpose(0, 1), out["neutral"], float(self.rho))
        rep = ccd_rep_loss(out["neutral"], neutral_orig)
        return {"bias": bias, "rep": rep, "loss": bias + self.beta * rep}

    def ccd_terms(self, x: Any) -> dict[str, torch.Tensor]:
        """:meth:`losses` of a batch of tuples ``x``."""
        batch = {"x": x}
        return self.losses(batch, self.step_outputs(batch))

    # ------------------------------------------------------------------ ρ
    @torch.no_grad()
    def estimate_rho(self, tuples: list[tuple[str, ...]], batch_size: int = 64) -> float:
        """ρ from the attribute-to-neutral distances of the original encoder over ``tuples`` (``rho_estimate``)."""
        if not tuples:
            raise ValueError("CCD.estimate_rho needs at least one training tuple")
        was = self.training
        self.eval()
        dists = []
        try:
            for i in range(0, len(tuples), batch_size):
                chunk = tuples[i:i + batch_size]
                x = [list(v) for v in zip(*chunk)]
                attr, neutral = self.embed_tuples(x, original=True)
                dists.append((attr.float() - neutral.float()[None]).norm(dim=-1).flatten().cpu())
        finally:
            self.train(was)
        d = torch.cat(dists).double()
        how = self.rho_estimate
        value = {"median": d.median(), "mean": d.mean(), "std": d.std(unbiased=False),
                 "variance": d.var(unbiased=False)}[how]
        rho = float(value)
        if not rho > 0:
            raise ValueError(f"CCD: the {how} of the attribute-to-neutral distances is {rho}: the tuples' versions "
                             "coincide with their neutral versions (check the tuple data), or pass rho=...")
        return rho

    def on_fit_start(self) -> None:
        super().on_fit_start()
        if torch.isfinite(self.rho):
            return
        dm = self.attached_datamodule
        if dm is None:
            raise RuntimeError("CCD: ρ is estimated from the datamodule's training tuples; fit with a "
                               "CounterfactualTuples datamodule or pass rho=...")
        # Every process reads the same (first) tuples, so ρ is identical on all ranks.
        rows = list(dm.splits["train"].x[: self.rho_max_rows])
        self.rho.fill_(self.estimate_rho(rows))

    # ------------------------------------------------------------------ metrics
    def reset_metrics(self, stage: str) -> None:
        if stage == "val":
            metrics = [self.val_cced, *self.val_means.values()]
        else:
            metrics = [self.test_cced, self.test_cced_orig, *self.test_means.values(), *self.test_dist_mean]
        for m in metrics:
            m.reset()

    def update_metrics(self, stage: str, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> None:
        """Validation: mean ``loss`` / ``bias`` / ``rep`` and CCED. Test: also CCED of the original encoder and the
        mean attribute-to-neutral distance of each group."""
        attr, neutral = out["attribute"], out["neutral"]
        bs = self.batch_rows(batch)
        terms = {}
        if stage == "val" or torch.isfinite(self.rho):
            terms = self.losses(batch, out)
        elif stage == "test":
            with torch.no_grad():
                terms = {"rep": ccd_rep_loss(neutral, self.embed(batch["x"][-1], original=True))}
        means = self.val_means if stage == "val" else self.test_means
        for name, value in terms.items():
            means[name].update(value.detach().float(), bs)
        (self.val_cced if stage == "val" else self.test_cced).update(attr.float(), neutral.float())
        if stage == "test":
            attr_o, neutral_o = self.embed_tuples(batch["x"], original=True)
            self.test_cced_orig.update(attr_o.transpose(0, 1).float(), neutral_o.float())
            dist = (attr.float() - neutral.float()[:, None]).norm(dim=-1)  # [B, G]
            for g in range(self.num_groups):
                self.test_dist_mean[g].update(dist[:, g])

    def compute_metrics(self, stage: str) -> dict[str, float]:
        if stage == "val":
            if self.val_means["loss"].update_count == 0:
                return {}
            values = {k: float(m.compute()) for k, m in self.val_means.items()}
            values["cced"] = float(self.val_cced.compute())
        else:
            if self.test_cced.update_count == 0:
                return {}
            names = self.group_names()
            values = {"cced": float(self.test_cced.compute()), "cced_original": float(self.test_cced_orig.compute()),
                      "rep_distance": float(self.test_means["rep"].compute()), "rho": float(self.rho)}
            if self.test_means["bias"].update_count:
                values["bias_loss"] = float(self.test_means["bias"].compute())
            for g in range(self.num_groups):
                values[f"distance_to_neutral/{names[g]}"] = float(self.test_dist_mean[g].compute())
        self.reset_metrics(stage)
        return values

    def on_validation_metrics(self, values: dict[str, float]) -> None:
        """Record the validation loss (``val_history``) and the lowest so far (``val/best_loss``); the weights of the
        best are kept by the trainer's checkpoint callback."""
        loss = values["loss"]
        self.val_history.append((int(self.global_step), loss))
        self.best_val_loss.fill_(min(loss, float(self.best_val_loss)))
        self.log("val/best_loss", float(self.best_val_loss), sync_dist=False)

    def on_fit_end(self) -> None:
        """``restore_best``: load the best checkpoint the trainer's checkpoint callback kept."""
        if not self.restore_best:
            return
        callback = self.trainer.checkpoint_callback
        path = getattr(callback, "best_model_path", "") if callback is not None else ""
        if not path:
            rank_zero_info("CCD: no best checkpoint was kept (no checkpoint callback, or its metric was never "
                           "logged), so restore_best has nothing to load: the module keeps the last step's weights")
            return
        self.load_state_dict(load_checkpoint(path, map_location=self.device)["state_dict"])

    # ------------------------------------------------------------------ export
    def save_pretrained(self, path: str | Path) -> Path:
        """Write the (debiased) encoder with :meth:`faircl.models.encoders.HFTextEncoder.save_pretrained` (a Hugging
        Face and sentence-transformers directory; a Normalize module when ``normalize=True``) plus
        ``faircl_ccd.json`` (β, ρ, the best validation loss)."""
        if not isinstance(self.encoder, HFTextEncoder):
            raise TypeError(f"save_pretrained needs a Hugging Face encoder (encoder='hf'), got "
                            f"{type(self.encoder).__name__}")
        path = self.encoder.save_pretrained(path, normalize=self.normalize)
        (path / "faircl_ccd.json").write_text(json.dumps(
            {"method": "CCD", "beta": self.beta, "rho": float(self.rho), "rho_estimate": self.rho_estimate,
             "normalize": self.normalize, "pooling": self.encoder.pooling, "best_val_loss": float(self.best_val_loss)},
            indent=2))
        return path


class OriginalEncoder(CCD):
    """The encoder CCD starts from, left as it is: the baseline of the embedding protocols (``faircl bench
    embeddings``). Fitting it takes no optimiser step (``training_step`` returns nothing), so its checkpoint holds
    the original weights and its test reports what every debiasing method is compared with.

    Args:
        rho: the bandwidth of the validation loss it logs; fixed (1.0) because nothing is chosen by it.
        **kwargs: the :class:`CCD` arguments (the encoder, ``normalize``).
    """

    def __init__(self, rho: float | None = 1.0, **kwargs: Any) -> None:
        super().__init__(rho=rho, **kwargs)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        return None  # no loss: Lightning skips the backward pass and the optimiser step
