"""Pipelines of exported models: several stages and the glue between them, described by ``pipeline.yaml``.

A pipeline folder holds ``pipeline.yaml`` beside sub-folders, each an export folder (an artifact and its own
``deploy.yaml``)::

    ocr_pipeline/
      pipeline.yaml
      det/   deploy.yaml  model.onnx
      cls/   deploy.yaml  model.onnx
      rec/   deploy.yaml  model.onnx

    # pipeline.yaml
    version: 1
    task: ocr
    glue: ocr/det_cls_rec          # a registered glue function, by key
    stages:                        # in the order they run
      det: {model: det, parameters: {unclip_ratio: 1.5, box_threshold: 0.6}}
      cls: {model: cls}
      rec: {model: rec, parameters: {height: 48}}
    parameters: {drop_score: 0.5}  # the glue's keyword arguments

The glue is Python that a kit registers under a key (:func:`register_glue`); the file names it by that key only,
never by an import path: a pipeline file is data, and loading one must not run code of the file's choosing.
:class:`DeployedPipeline` loads every stage with :class:`~oarkit.core.deploy.DeployedModel` and calls the glue
with the stages, the inputs and the parameters. The same glue runs on eager modules (a :class:`Stage` built from
an ``nn.Module``), which is how a pipeline is checked against PyTorch.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from torch import nn

from oarkit.core.deploy.manifest import DEPLOY_FILE, DeployManifest, _plain, is_export_dir, read_manifest
from oarkit.core.deploy.model import DeployedModel
from oarkit.core.engine.checkpoint import atomic_write_text
from oarkit.core.errors import ConfigError, OarkitError, UnknownNameError, did_you_mean
from oarkit.core.kits import KITS

PIPELINE_FILE = "pipeline.yaml"
PIPELINE_VERSION = 1


@dataclass
class Stage:
    """One model of a pipeline, as the glue sees it.

    Attributes:
        name: the stage name (``det``, ``rec``).
        model: the model: a :class:`~oarkit.core.deploy.DeployedModel` (tensors in, tensors out) or the eager
            export wrapper it was exported from.
        parameters: the stage's own parameters from ``pipeline.yaml``.
        manifest: the stage's ``deploy.yaml`` (preprocessing, labels, post-processing), ``None`` for an eager
            stage built without one.
        folder: the stage's export folder, ``None`` for an eager stage.
    """

    name: str
    model: Callable[..., Any]
    parameters: dict[str, Any] = field(default_factory=dict)
    manifest: DeployManifest | None = None
    folder: Path | None = None


#: ``glue(stages, inputs, **parameters) -> results``: runs the stages in turn on ``inputs``
GlueFunction = Callable[..., Any]


@dataclass(frozen=True)
class Glue:
    """A registered glue function and the stages it expects.

    Attributes:
        name: the registry key (``ocr/det_cls_rec``).
        function: ``function(stages: Mapping[str, Stage], inputs, **parameters)``.
        stages: the stage names the function reads, in the order they run.
    """

    name: str
    function: GlueFunction
    stages: tuple[str, ...]

    def parameters(self) -> dict[str, Any] | None:
        """The function's keyword parameters and their defaults (``inspect.Parameter.empty`` when required);
        ``None`` when it takes any (``**parameters``)."""
        params = list(inspect.signature(self.function).parameters.values())[2:]
        if any(p.kind == p.VAR_KEYWORD for p in params):
            return None
        return {p.name: p.default for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}

    def check(self, stages: Sequence[str], parameters: Mapping[str, Any], *, where: str) -> None:
        """Raise :class:`ConfigError` when ``stages`` or ``parameters`` do not fit the function."""
        missing = [s for s in self.stages if s not in stages]
        extra = [s for s in stages if s not in self.stages]
        if missing or extra:
            raise ConfigError(f"{where}: the glue {self.name!r} runs the stages {list(self.stages)}; "
                              + (f"missing {missing}" if missing else "")
                              + ("; " if missing and extra else "")
                              + (f"unknown {extra}" if extra else ""))
        known = self.parameters()
        if known is None:
            return
        for key in parameters:
            if key not in known:
                raise ConfigError(f"{where}: the glue {self.name!r} has no parameter {key!r}."
                                  f"{did_you_mean(key, known)} Parameters: {', '.join(known) or 'none'}")
        required = [k for k, v in known.items() if v is inspect.Parameter.empty and k not in parameters]
        if required:
            raise ConfigError(f"{where}: the glue {self.name!r} needs the parameters {required}")


_GLUES: dict[str, Glue] = {}


def register_glue(name: str, *, stages: Sequence[str]) -> Callable[[GlueFunction], GlueFunction]:
    """Register a glue function under ``name`` (decorator); a kit names it ``<kit>/<what>``.

    The function is called as ``function(stages, inputs, **parameters)`` with the stages by name (each a
    :class:`Stage`), the pipeline's inputs and the ``parameters`` of ``pipeline.yaml``; its keyword parameters
    are what a pipeline file may set.

    Raises:
        ConfigError: another function is registered under ``name``.
    """

    def decorate(function: GlueFunction) -> GlueFunction:
        known = _GLUES.get(name)
        if known is not None and (known.function.__module__, known.function.__qualname__) != (
                function.__module__, function.__qualname__):
            raise ConfigError(f"glue {name!r} is already registered ({known.function.__module__}."
                              f"{known.function.__qualname__})")
        if len(inspect.signature(function).parameters) < 2:
            raise ConfigError(f"glue {name!r}: {function.__qualname__} must take (stages, inputs, **parameters)")
        _GLUES[name] = Glue(name=name, function=function, stages=tuple(stages))
        return function

    return decorate


def get_glue(name: str) -> Glue:
    """The glue registered under ``name``, importing the kit its key names first (``ocr/...``: ``oarkit.ocr``).

    Raises:
        UnknownNameError: nothing is registered under ``name``; the message lists the closest keys.
    """
    kit = name.split("/", 1)[0]
    if name not in _GLUES and kit in KITS and importlib.util.find_spec(f"oarkit.{kit}") is not None:
        importlib.import_module(f"oarkit.{kit}")  # a kit registers its glue when it is imported
    if name not in _GLUES:
        raise UnknownNameError(f"unknown glue {name!r}.{did_you_mean(name, _GLUES)} Registered: "
                               f"{', '.join(sorted(_GLUES)) or 'none'} (a kit registers its glue with "
                               "oarkit.core.deploy.register_glue)")
    return _GLUES[name]


def list_glues() -> list[str]:
    """Registered glue keys."""
    return sorted(_GLUES)


@dataclass
class StageSpec:
    """A stage of ``pipeline.yaml``: its export folder (relative to the pipeline folder) and parameters."""

    model: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineManifest:
    """The contents of ``pipeline.yaml``.

    Attributes:
        glue: the registry key of the glue function.
        stages: the stages by name, in the order they run.
        parameters: the glue's keyword arguments.
        task: the task id of what the pipeline does (``ocr``).
        version: the file format's version.
    """

    glue: str
    stages: dict[str, StageSpec]
    parameters: dict[str, Any] = field(default_factory=dict)
    task: str = ""
    version: int = PIPELINE_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "task": self.task, "glue": self.glue,
                "stages": {n: dataclasses.asdict(s) for n, s in self.stages.items()}, "parameters": self.parameters}

    @classmethod
    def from_dict(cls, data: Any, *, where: str = PIPELINE_FILE) -> PipelineManifest:
        if not isinstance(data, dict):
            raise ConfigError(f"{where} must hold a mapping with glue and stages, not {type(data).__name__}")
        unknown = [k for k in data if k not in ("version", "task", "glue", "stages", "parameters")]
        if unknown:
            raise ConfigError(f"{where} has unknown keys {unknown}.{did_you_mean(unknown[0], ('glue', 'stages'))}")
        if not isinstance(data.get("glue"), str) or not data["glue"]:
            raise ConfigError(f"{where} names no glue (glue: <registered key>)")
        stages = data.get("stages")
        if not isinstance(stages, dict) or not stages:
            raise ConfigError(f"{where} names no stages (stages: {{name: {{model: sub-folder}}}})")
        specs = {}
        for name, stage in stages.items():
            stage = {"model": stage} if isinstance(stage, str) else stage
            if not isinstance(stage, dict) or "model" not in stage:
                raise ConfigError(f"{where}: stage {name!r} needs model: <sub-folder holding its export>")
            extra = [k for k in stage if k not in ("model", "parameters")]
            if extra:
                raise ConfigError(f"{where}: stage {name!r} has unknown keys {extra} (model, parameters)")
            specs[str(name)] = StageSpec(model=str(stage["model"]), parameters=dict(stage.get("parameters") or {}))
        return cls(glue=data["glue"], stages=specs, parameters=dict(data.get("parameters") or {}),
                   task=str(data.get("task") or ""), version=int(data.get("version", PIPELINE_VERSION)))

    def write(self, folder: str | Path) -> Path:
        """Write ``pipeline.yaml`` into ``folder`` atomically; returns its path."""
        path = Path(folder) / PIPELINE_FILE
        atomic_write_text(path, yaml.safe_dump(_plain(self.to_dict()), sort_keys=False, allow_unicode=True))
        return path


def is_pipeline_dir(path: str | Path) -> bool:
    """Whether ``path`` is a pipeline folder (holds a ``pipeline.yaml``)."""
    return (Path(path) / PIPELINE_FILE).is_file()


def stage_folder(folder: str | Path, name: str, model: str) -> Path:
    """The export folder of stage ``name``: ``model`` under the pipeline ``folder``.

    Raises:
        ConfigError: ``model`` leaves the pipeline folder (absolute, or through ``..``).
        OarkitError: the folder is missing or holds no ``deploy.yaml``.
    """
    relative = PurePosixPath(model)
    if relative.is_absolute() or ".." in relative.parts:
        raise ConfigError(f"{Path(folder) / PIPELINE_FILE}: stage {name!r} names {model!r}; a stage's model must "
                          "be a sub-folder of the pipeline folder")
    path = Path(folder) / relative
    if not path.is_dir():
        raise OarkitError(f"{Path(folder) / PIPELINE_FILE}: stage {name!r} names the folder {model!r}, which is "
                          f"missing from {folder}; export the stage's model there (oarkit export ... -o {path})")
    if not is_export_dir(path):
        raise OarkitError(f"{Path(folder) / PIPELINE_FILE}: stage {name!r} folder {path} has no {DEPLOY_FILE}; "
                          "it must hold an exported model (oarkit export writes one)")
    return path


def read_pipeline(folder: str | Path) -> PipelineManifest:
    """The :class:`PipelineManifest` of a pipeline folder.

    Raises:
        OarkitError: there is no readable ``pipeline.yaml``.
    """
    path = Path(folder) / PIPELINE_FILE
    if not path.is_file():
        raise OarkitError(f"{folder} is not a pipeline folder (no {PIPELINE_FILE}); write one with "
                          "oarkit.core.deploy.write_pipeline")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise OarkitError(f"{path} is not valid YAML: {err}") from err
    return PipelineManifest.from_dict(data, where=str(path))


def write_pipeline(folder: str | Path, *, glue: str, stages: Mapping[str, str | StageSpec],
                   parameters: Mapping[str, Any] | None = None, task: str = "") -> PipelineManifest:
    """Write ``pipeline.yaml`` into ``folder`` after checking it: the glue is registered, it takes these stages
    and parameters, and every stage folder holds an export.

    Args:
        folder: the pipeline folder (the stage folders are inside it).
        glue: the glue's registry key.
        stages: stage name -> sub-folder (or :class:`StageSpec` with the stage's parameters), in running order.
        parameters: the glue's keyword arguments.
        task: the task id of what the pipeline does.
    """
    specs = {n: s if isinstance(s, StageSpec) else StageSpec(model=str(s)) for n, s in stages.items()}
    manifest = PipelineManifest(glue=glue, stages=specs, parameters=dict(parameters or {}), task=task)
    where = str(Path(folder) / PIPELINE_FILE)
    get_glue(glue).check(list(specs), manifest.parameters, where=where)
    for name, spec in specs.items():
        stage_folder(folder, name, spec.model)
    manifest.write(folder)
    return manifest


class DeployedPipeline:
    """Several models and the glue between them, run as one: ``pipeline(inputs) -> results``.

    Example::

        ocr = DeployedPipeline.load("exports/ppocr")
        results = ocr(image)
        ocr.stages["rec"].manifest.labels   # what each stage's deploy.yaml says

    Args:
        glue: the glue's registry key.
        stages: the stages by name (:class:`Stage`, or a bare model for a stage without parameters).
        parameters: the glue's keyword arguments.
        folder: the pipeline folder it was loaded from, if any.
    """

    def __init__(self, glue: str, stages: Mapping[str, Stage | Callable[..., Any]],
                 parameters: Mapping[str, Any] | None = None, *, folder: str | Path | None = None) -> None:
        self.glue = get_glue(glue)
        self.stages = {n: s if isinstance(s, Stage) else Stage(name=n, model=s) for n, s in stages.items()}
        self.parameters = dict(parameters or {})
        self.folder = Path(folder) if folder is not None else None
        self.glue.check(list(self.stages), self.parameters,
                        where=str(self.folder / PIPELINE_FILE) if self.folder else f"DeployedPipeline({glue!r})")

    @classmethod
    def load(cls, folder: str | Path, *, models: Mapping[str, nn.Module] | None = None,
             **runtime_options: Any) -> DeployedPipeline:
        """Load a pipeline folder: every stage's export with :class:`DeployedModel`, and the glue by its key.

        Args:
            folder: the folder holding ``pipeline.yaml``.
            models: modules to run instead of some stages' artifacts (the eager models, to compare), by stage name;
                the stages keep their manifests and parameters.
            **runtime_options: engine settings for every stage (``threads=2``).

        Raises:
            OarkitError: ``pipeline.yaml`` or a stage folder is missing or unreadable.
            UnknownNameError: the glue is not registered.
            ConfigError: the stages or parameters do not fit the glue.
        """
        folder = Path(folder)
        manifest = read_pipeline(folder)
        glue = get_glue(manifest.glue)
        glue.check(list(manifest.stages), manifest.parameters, where=str(folder / PIPELINE_FILE))
        models = dict(models or {})
        unknown = [n for n in models if n not in manifest.stages]
        if unknown:
            raise ConfigError(f"models for unknown stages {unknown}; stages: {', '.join(manifest.stages)}")
        stages = {}
        for name, spec in manifest.stages.items():
            path = stage_folder(folder, name, spec.model)
            deployed = DeployedModel(path, **runtime_options) if name not in models else None
            stage_manifest = deployed.manifest if deployed is not None else read_manifest(path)
            stages[name] = Stage(name=name, model=models.get(name) or deployed, parameters=dict(spec.parameters),
                                 manifest=stage_manifest, folder=path)
        return cls(manifest.glue, stages, manifest.parameters, folder=folder)

    def __call__(self, inputs: Any) -> Any:
        """Run the glue on ``inputs``."""
        return self.glue.function(self.stages, inputs, **self.parameters)

    def __repr__(self) -> str:
        stages = ", ".join(f"{n}={s.manifest.format if s.manifest else type(s.model).__name__}"
                           for n, s in self.stages.items())
        return f"DeployedPipeline({self.glue.name!r}, {stages})"
