"""faircl: fair representation learning with contrastive and metric objectives, as PyTorch Lightning modules."""

__version__ = "0.2.0"
