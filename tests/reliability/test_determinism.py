"""Same seed, same weights: every method trains bit-identically twice on CPU.

The CPU kernel behind the backward of advanced indexing (``index_put_`` with ``accumulate=True``) adds floats with
atomic operations on several threads once the update has 32768 elements or more, so the order of the additions, and
the last bits of the result, change from run to run when the index repeats rows (e.g. ``sums[ids]`` over class
sums). faircl's own code gathers repeated rows with ``index_select`` (backward: a serial ``index_add``); the scan below
fails on any training step that still reaches the atomic kernel with repeated indices.
"""

from __future__ import annotations

import lightning as L
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from faircl.data.synthetic import BiasedFeatures
from faircl.methods import METHODS
from faircl.utils import quiet_trainer_kwargs

TRAINABLE = sorted(n for n in METHODS if n != "CCD")  # CCD trains on counterfactual tuples: its own test below
BIG = {"hidden": 300, "n_train": 512, "batch_size": 128}


class _AtomicIndexAdds(TorchDispatchMode):
    """Records every floating-point ``index_put`` with ``accumulate=True`` whose index repeats a destination row."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket in (torch.ops.aten.index_put, torch.ops.aten.index_put_, torch.ops.aten._index_put_impl_):
            accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
            indices = [i for i in args[1] if i is not None]
            if accumulate and args[0].is_floating_point() and indices and indices[0].dtype != torch.bool:
                flat = torch.stack([i.reshape(-1) for i in torch.broadcast_tensors(*indices)], dim=1)
                if len(torch.unique(flat, dim=0)) < len(flat):
                    self.hits.append(f"{func} into {tuple(args[0].shape)}")
        return func(*args, **kwargs)


def _build(name: str, hidden: int = 16, n_train: int = 256, batch_size: int = 64):
    views = METHODS[name].requires_views
    dm = BiasedFeatures(n_train=n_train, n_val=64, n_test=64, dim=8, batch_size=batch_size, two_views=views)
    kwargs = {"encoder": "mlp", "encoder_kwargs": {"hidden_dim": hidden, "num_layers": 2}}
    if name in ("INLP",):
        kwargs["leakage"] = False
    model = METHODS[name](num_classes=2, num_groups=2, input_dim=8, **kwargs)
    return dm, model


def _fit(name: str, seed: int = 3, deterministic: bool = False, **kw) -> dict[str, torch.Tensor]:
    L.seed_everything(seed, verbose=False)
    dm, model = _build(name, **kw)
    L.Trainer(**quiet_trainer_kwargs(max_epochs=3, deterministic=deterministic, num_sanity_val_steps=0)).fit(
        model, datamodule=dm)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("name", TRAINABLE)
def test_no_training_step_reaches_the_atomic_index_add(name):
    L.seed_everything(0, verbose=False)
    dm, model = _build(name)
    with _AtomicIndexAdds() as scan:
        L.Trainer(**quiet_trainer_kwargs(max_epochs=3, num_sanity_val_steps=0, limit_val_batches=0)).fit(
            model, datamodule=dm)
    assert not scan.hits, f"{name}: {sorted(set(scan.hits))}"


def test_the_scan_sees_a_repeated_gather():
    x = torch.randn(3, 4, requires_grad=True)
    with _AtomicIndexAdds() as scan:
        x[torch.tensor([0, 0, 2])].sum().backward()
    assert scan.hits


@pytest.mark.parametrize("name", TRAINABLE)
def test_two_runs_with_one_seed_give_identical_weights(name):
    # 128 rows x hidden 300 (the default width over frozen features): large enough for the multi-threaded kernels
    torch.set_num_threads(max(2, torch.get_num_threads()))
    first, second = _fit(name, **BIG), _fit(name, **BIG)
    assert first.keys() == second.keys()
    differ = [k for k in first if not torch.equal(first[k], second[k])]
    assert not differ, f"{name}: {differ}"


def test_trainer_deterministic_gives_identical_weights():
    first, second = _fit("ConFair", deterministic=True, **BIG), _fit("ConFair", deterministic=True, **BIG)
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_ccd_two_runs_with_one_seed_give_identical_weights(tmp_path):
    from faircl.data.counterfactual import CounterfactualTuples
    from faircl.eval.embedding_bias import save_random_bert

    texts = [f"{s} {p}." for s in ("He", "She", "His brother", "Her sister", "The man", "The woman")
             for p in ("works as a nurse", "likes to cook", "plays football", "repairs old cars")]

    def dm():
        return CounterfactualTuples(inline_texts=texts, word_lists="builtin", keep_words=None, split_sentences=False,
                                    batch_size=8, val_fraction=0.2, test_fraction=0.2, seed=0)

    probe = dm()
    probe.setup("fit")
    words = [s for split in probe.splits.values() for t in split.x for s in t]
    bert = str(save_random_bert(tmp_path / "bert", words, hidden_size=32))
    states = []
    for _ in range(2):
        L.seed_everything(0, verbose=False)
        model = METHODS["CCD"](encoder="hf", encoder_kwargs={"model_dir": bert}, lr=1e-3)
        with _AtomicIndexAdds() as scan:
            L.Trainer(**quiet_trainer_kwargs(max_steps=6, num_sanity_val_steps=0, limit_val_batches=0)).fit(
                model, datamodule=dm())
        assert not scan.hits, sorted(set(scan.hits))
        states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
