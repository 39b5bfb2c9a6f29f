"""A datamodule of your own: rows from anywhere, returned as three FairDataset splits."""

import torch

from faircl.data import FairDataModule, FairDataset


class MyTable(FairDataModule):
    """Features with a task label and a protected attribute (here random; read your own files instead).

    Args:
        n: rows in all (60% train, 20% val, 20% test).
        dim: feature dimension.
        **kwargs: FairDataModule arguments (batch_size, sampler, two_views, seed, ...).
    """

    class_names = ["negative", "positive"]
    group_names = ["group 0", "group 1"]

    def __init__(self, n: int = 500, dim: int = 8, **kwargs) -> None:
        super().__init__(**kwargs)
        self.n, self.dim = n, dim

    @property
    def input_dim(self) -> int:
        return self.dim                         # read by the CLI and linked into the method's input_dim

    @property
    def input_kind(self) -> str:
        return "features"                       # the methods' encoder="auto" picks the MLP encoder

    def load_splits(self) -> dict[str, FairDataset]:
        g = torch.Generator().manual_seed(self.seed)
        x = torch.randn(self.n, self.dim, generator=g)
        a = torch.randint(0, 2, (self.n,), generator=g)
        y = ((x[:, 0] + 0.5 * a) > 0.25).long()  # the label leaks through the attribute
        cut = [0, int(0.6 * self.n), int(0.8 * self.n), self.n]
        return {name: FairDataset(x[lo:hi], y[lo:hi], a[lo:hi], num_classes=2, num_groups=2, source=f"MyTable {name}")
                for name, lo, hi in zip(("train", "val", "test"), cut, cut[1:])}

    def view_transform(self):
        """A random view of one row (used with two_views=True by the two-view methods)."""
        return lambda row: row + 0.1 * torch.randn_like(row)


def main(**trainer_options) -> dict[str, float]:
    import lightning as L

    from faircl.methods import TwoStageCL

    dm = MyTable(two_views=True)
    model = TwoStageCL(num_classes=dm.num_classes, num_groups=dm.num_groups, input_dim=dm.input_dim,
                       input_kind=dm.input_kind, stage1_epochs=2)
    trainer = L.Trainer(**{"max_epochs": 4, **trainer_options})
    trainer.fit(model, datamodule=dm)
    trainer.test(model, datamodule=dm)
    return model.test_report


if __name__ == "__main__":
    print(main())
