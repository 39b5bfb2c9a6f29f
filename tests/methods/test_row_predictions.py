"""Per-row predictions read off a representation (``row_predictions``: ``knn`` / ``probe``), checked against
scikit-learn's 1-NN and a scikit-learn logistic regression built here, on planted data and through a trainer."""

from __future__ import annotations

import lightning as L
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from faircl.data import BiasedFeatures
from faircl.methods import CE, DML, SimCLR
from faircl.methods.records import embedding_predictor

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _train(n: int = 60, d: int = 5, classes: int = 3, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    h = torch.randn(n, d, generator=g) + 2.0 * torch.nn.functional.one_hot(y, d).float()
    return {"h": h, "z": torch.randn(n, 4, generator=g) + y[:, None].float(), "y": y}


def test_knn_matches_sklearn_cosine_1nn_over_z() -> None:
    train = _train()
    query = _train(n=40, seed=1)
    pred, proba = embedding_predictor("knn", train, num_classes=3)(query)
    ref = KNeighborsClassifier(n_neighbors=1, metric="cosine", algorithm="brute").fit(train["z"], train["y"])
    np.testing.assert_array_equal(pred, ref.predict(query["z"]))
    np.testing.assert_array_equal(proba.argmax(1), pred)
    assert proba.shape == (40, 3) and np.allclose(proba.sum(1), 1.0)


def test_knn_uses_h_without_z_and_chunks_give_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    train = {k: v for k, v in _train(n=50).items() if k != "z"}
    query = {k: v for k, v in _train(n=33, seed=2).items() if k != "z"}
    whole, _ = embedding_predictor("knn", train, num_classes=3)(query)
    ref = KNeighborsClassifier(n_neighbors=1, metric="cosine", algorithm="brute").fit(train["h"], train["y"])
    np.testing.assert_array_equal(whole, ref.predict(query["h"]))
    monkeypatch.setattr("faircl.methods.records._KNN_CHUNK", 4)
    chunked, _ = embedding_predictor("knn", train, num_classes=3)(query)
    np.testing.assert_array_equal(chunked, whole)


def test_knn_tie_goes_to_the_lower_training_row() -> None:
    z = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    train = {"h": z, "z": z, "y": torch.tensor([1, 0, 0])}
    pred, _ = embedding_predictor("knn", train, num_classes=2)({"h": z[:1], "z": z[:1] * 3})
    assert pred.tolist() == [1]


def test_probe_matches_a_standardised_logistic_regression() -> None:
    train, query = _train(n=200), _train(n=80, seed=3)
    pred, proba = embedding_predictor("probe", train, num_classes=3)(query)
    ref = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(train["h"].numpy(),
                                                                                train["y"].numpy())
    agree = np.mean(pred == ref.predict(query["h"].numpy()))
    assert agree >= 0.97, agree
    np.testing.assert_allclose(proba, ref.predict_proba(query["h"].numpy()), atol=0.05)


def test_probe_with_classes_missing_from_train_and_with_one_class() -> None:
    train = _train(n=90, classes=2)  # labels 0 and 1 only, proba is 3 wide
    pred, proba = embedding_predictor("probe", train, num_classes=3)(_train(n=10, seed=4))
    assert proba.shape == (10, 3) and np.all(proba[:, 2] == 0) and set(pred) <= {0, 1}
    one = {**train, "y": torch.full((90,), 2)}
    pred, proba = embedding_predictor("probe", one, num_classes=3)(_train(n=7, seed=5))
    assert pred.tolist() == [2] * 7 and np.all(proba[:, 2] == 1)
    pred, proba = embedding_predictor("probe", one, num_classes=3)({"h": torch.zeros(0, 5)})
    assert pred.shape == (0,) and proba.shape == (0, 3)


def test_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="row_predictions"):
        CE(input_dim=4, row_predictions="nearest")
    with pytest.raises(ValueError, match="row_predictions"):
        embedding_predictor("nearest", _train(), num_classes=3)


def _fit_test(model: L.LightningModule, seed: int = 0) -> tuple[L.LightningModule, BiasedFeatures]:
    L.seed_everything(seed, verbose=False)
    dm = BiasedFeatures(n_train=300, n_val=100, n_test=150, dim=8, batch_size=64, seed=seed,
                        two_views=bool(type(model).requires_views))
    trainer = L.Trainer(max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, datamodule=dm)
    trainer.test(model, datamodule=dm, verbose=False)
    return model, dm


def test_dml_knn_rows_through_a_trainer_are_the_nearest_training_label() -> None:
    model, dm = _fit_test(DML(input_dim=8, encoder_kwargs={"hidden_dim": 16}, row_predictions="knn",
                              leakage=False))
    train = model.collect(dm.plain_loader("train"), keys=("z", "y"))
    rows = model.test_rows
    assert set(rows) == {"test", "val"}
    for split in ("test", "val"):
        got = model.collect(dm.plain_loader(split), keys=("z", "y"))
        ref = KNeighborsClassifier(n_neighbors=1, metric="cosine", algorithm="brute").fit(train["z"], train["y"])
        np.testing.assert_array_equal(rows[split]["pred"], ref.predict(got["z"]))
        np.testing.assert_array_equal(rows[split]["idx"], got["idx"].numpy())
        assert len(rows[split]["idx"]) == len(dm.splits[split])
    # the online probe's logits would give other predictions: the rows are not the report's
    assert model.hparams.row_predictions == "knn"


def test_simclr_probe_rows_and_logits_default_differ_in_source() -> None:
    kwargs = {"input_dim": 8, "encoder_kwargs": {"hidden_dim": 16}, "leakage": False}
    probe_model, dm = _fit_test(SimCLR(row_predictions="probe", **kwargs))
    train = probe_model.collect(dm.plain_loader("train"), keys=("h", "y"))
    test = probe_model.collect(dm.plain_loader("test"), keys=("h", "y"))
    ref = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(train["h"].numpy(),
                                                                                train["y"].numpy())
    agree = np.mean(probe_model.test_rows["test"]["pred"] == ref.predict(test["h"].numpy()))
    assert agree >= 0.97, agree
    ce, _ = _fit_test(CE(**kwargs))
    np.testing.assert_array_equal(ce.test_rows["test"]["pred"], ce.test_rows["test"]["proba"].argmax(1))
