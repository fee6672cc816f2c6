"""Deployment: exported artifacts with their ``deploy.yaml``, run on onnxruntime, OpenVINO, ExecuTorch or torch.

An export folder holds one artifact (``model.onnx``, ``model.pt2``, ``model.xml``, ``model.pte``) and a
``deploy.yaml`` (:class:`DeployManifest`) that says how to feed it and read its outputs. :class:`DeployedModel`
loads such a folder and behaves like the eager export wrapper (tensors in, tensors out), so a kit's predictor
runs the same code on a run directory and on an exported artifact. A pipeline folder (``pipeline.yaml``) names
several export folders and the registered glue between them; :class:`DeployedPipeline` runs it.
"""

from oarkit.core.deploy.manifest import DEPLOY_FILE, DeployManifest, TensorInfo, is_export_dir, read_manifest
from oarkit.core.deploy.model import DeployedModel
from oarkit.core.deploy.optional import MissingDependencyError, require
from oarkit.core.deploy.pipeline import (
    PIPELINE_FILE,
    DeployedPipeline,
    PipelineManifest,
    Stage,
    StageSpec,
    get_glue,
    is_pipeline_dir,
    list_glues,
    read_pipeline,
    register_glue,
    write_pipeline,
)
from oarkit.core.deploy.runtimes import RUNTIMES, Runtime, open_runtime

__all__ = [
    "DEPLOY_FILE", "PIPELINE_FILE", "RUNTIMES", "DeployManifest", "DeployedModel", "DeployedPipeline",
    "MissingDependencyError", "PipelineManifest", "Runtime", "Stage", "StageSpec", "TensorInfo", "get_glue",
    "is_export_dir", "is_pipeline_dir", "list_glues", "open_runtime", "read_manifest", "read_pipeline",
    "register_glue", "require", "write_pipeline",
]
