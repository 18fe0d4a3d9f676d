"""Models and wire formats: the `Model` seam, provider adapters, and `classify`."""

from donegate.models.base import Model, ModelRequest, ModelSettings, ToolSpec, WireFormat
from donegate.models.function import FunctionModel
from donegate.models.infer import infer_model
from donegate.models.registry import APIS, classify, wire_format

__all__ = [
    "APIS",
    "FunctionModel",
    "Model",
    "ModelRequest",
    "ModelSettings",
    "ToolSpec",
    "WireFormat",
    "classify",
    "infer_model",
    "wire_format",
]
