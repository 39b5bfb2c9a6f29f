"""Encoders and heads."""

from faircl.models.encoders import (
    DEFAULT_ENCODERS,
    available_encoders,
    build_encoder,
    check_encoder_input,
    default_encoder,
    encoder_input_kinds,
    register_encoder,
)
from faircl.models.heads import ProjectionHead, mlp

__all__ = ["DEFAULT_ENCODERS", "available_encoders", "build_encoder", "check_encoder_input", "default_encoder",
           "encoder_input_kinds", "register_encoder", "ProjectionHead", "mlp"]
