"""A method of your own: cross-entropy plus a penalty on the gap between the groups' mean losses."""

import lightning as L
import torch
from torch.nn import functional as F

from faircl.data import BiasedFeatures
from faircl.methods import FairModule


class GroupLossGap(FairModule):
    """``L = L_ce + λ_gap · (max_a mean CE of group a − min_a mean CE of group a)``.

    Args:
        lambda_gap: weight of the gap term.
        **kwargs: FairModule arguments (encoder, lr, ...).
    """

    def __init__(self, lambda_gap: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)              # saves the hyper-parameters of this class (lambda_gap included)
        self.lambda_gap = lambda_gap            # then its own arguments (and heads, if it had any)

    def losses(self, batch, out):
        terms = super().losses(batch, out)      # {"ce": ..., "loss": ...}; every term is logged as train/<name>
        per_row = F.cross_entropy(out["logits"], batch["y"], reduction="none")
        means = [per_row[batch["a"] == g].mean() for g in range(self.num_groups) if (batch["a"] == g).any()]
        # A batch with one group has no gap: 0, still connected to the graph.
        terms["group_gap"] = torch.stack(means).max() - torch.stack(means).min() if len(means) > 1 else 0 * per_row.sum()
        terms["loss"] = terms["ce"] + self.lambda_gap * terms["group_gap"]
        return terms


def main(**trainer_options) -> dict[str, float]:
    dm = BiasedFeatures()
    model = GroupLossGap(lambda_gap=1.0, num_classes=dm.num_classes, num_groups=dm.num_groups,
                         input_dim=dm.input_dim, input_kind=dm.input_kind)
    trainer = L.Trainer(**{"max_epochs": 5, **trainer_options})
    trainer.fit(model, datamodule=dm)
    trainer.test(model, datamodule=dm)
    return model.test_report


if __name__ == "__main__":
    print(main())
