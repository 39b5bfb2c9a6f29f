"""ConFair's ``normalize`` argument: Shen's l2-normalised tanh hidden layer (default) or fairlib's raw tanh layer."""

from __future__ import annotations

import math

import pytest
import torch

from faircl.methods.confair import ConFair


def literal_supcon(z: torch.Tensor, labels: torch.Tensor, tau: float) -> float:
    """Khosla's SupCon, mean over anchors with a positive, as a double loop."""
    total, anchors = 0.0, 0
    for i in range(len(z)):
        pos = [p for p in range(len(z)) if p != i and labels[p] == labels[i]]
        if not pos:
            continue
        den = sum(math.exp(float(z[i] @ z[k]) / tau) for k in range(len(z)) if k != i)
        total += -sum(math.log(math.exp(float(z[i] @ z[p]) / tau) / den) for p in pos) / len(pos)
        anchors += 1
    return total / anchors


@pytest.mark.parametrize("normalize", [True, False])
def test_contrastive_terms_see_l2_h_or_raw_h(normalize):
    torch.manual_seed(0)
    model = ConFair(num_classes=2, num_groups=2, input_dim=6, encoder="mlp",
                    encoder_kwargs={"hidden_dim": 5, "num_layers": 2}, temperature=0.5, normalize=normalize)
    x, y, a = torch.randn(10, 6), torch.randint(0, 2, (10,)), torch.randint(0, 2, (10,))
    out = model(x)
    h = out["h"].detach()
    z = torch.nn.functional.normalize(h, dim=-1) if normalize else h
    assert torch.all(h.abs() <= 1)  # the tanh hidden layer
    assert not normalize or torch.allclose(out["z"].norm(dim=-1), torch.ones(10))
    terms = model.contrastive_terms(out, y, a)
    assert float(terms["scl"].detach()) == pytest.approx(literal_supcon(z, y, 0.5), rel=1e-5)
    assert float(terms["fcl"].detach()) == pytest.approx(literal_supcon(z, a, 0.5), rel=1e-5)
    assert model.hparams.get("normalize", normalize) == normalize
