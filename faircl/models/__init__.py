"""Encoders and heads."""

from faircl.models.encoders import available_encoders, build_encoder, register_encoder
from faircl.models.heads import ProjectionHead, mlp

__all__ = ["available_encoders", "build_encoder", "register_encoder", "ProjectionHead", "mlp"]
