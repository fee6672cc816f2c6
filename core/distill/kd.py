"""Soft-target knowledge distillation (Hinton et al. 2015) as a task wrapper: ``distill=kd | ssld | feature``.

The config groups instantiate :class:`KnowledgeDistillation`; the config builder asks it to wrap the kit's task.
:class:`DistillTask` builds the student as the kit does, loads the teacher (a run or model directory, or a
registry name with its released weights), freezes it in eval mode, and on each training step:

1. runs the kit's own ``training_step`` on the student, recording each forward call of the student (inputs,
   output, and the outputs of the layers the kit names in :meth:`~oarkit.core.engine.task.Task.distill_layers`);
2. runs the teacher on the same inputs, without gradients;
3. adds ``alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T))`` over each pair of logits the kit
   declares (:meth:`~oarkit.core.engine.task.Task.distill_logits`) to ``(1 - alpha)`` times the task's loss;
   ``distill=feature`` adds the MSE of adapted features at named layer pairs (:mod:`.feature`), ``distill=ssld``
   (PaddleClas SSLD: soft targets only, ``alpha=1``) the soft-target term on a batch of unlabeled images.

The teacher is held by the wrapper, not by the model: checkpoints, EMA, export and predictors see the student
alone. meta.json records the method and the teacher.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.distill.extras import ExtrasState, extras_groups
from oarkit.core.distill.feature import FeatureImitation, parse_pairs
from oarkit.core.distill.record import call_outputs, record_calls
from oarkit.core.engine.task import DataModule, Task, TaskWrapper
from oarkit.core.errors import ConfigError

logger = logging.getLogger(__name__)


def kd_loss(student: torch.Tensor, teacher: torch.Tensor, temperature: float, dim: int = -1) -> torch.Tensor:
    """``T^2 * KL(softmax(teacher / T) || softmax(student / T))``, the mean over every position but ``dim``.

    Raises:
        ConfigError: the two logits differ in shape (a teacher trained on other classes, say).
    """
    if student.shape != teacher.shape:
        raise ConfigError(f"the teacher's logits have shape {list(teacher.shape)} but the student's "
                          f"{list(student.shape)}: a teacher must predict the student's classes (same class count "
                          "and order); train the teacher on this dataset's labels")
    t = float(temperature)
    log_student = torch.log_softmax(student.float() / t, dim=dim)
    log_teacher = torch.log_softmax(teacher.float() / t, dim=dim)
    per_position = (log_teacher.exp() * (log_teacher - log_student)).sum(dim=dim)
    return per_position.mean() * t * t


def load_teacher(source: str | Path) -> tuple[nn.Module, str, dict[str, Any]]:
    """The teacher model of a run or model directory, or of a registry name (its released weights), in eval
    mode with its parameters frozen; returns it, a description for the logs and meta.json, and its meta.json
    (``{}`` for a registry name).

    Raises:
        OarkitError: the source is none of these, or its weights cannot be had.
    """
    from oarkit.core.engine.checkpoint import find_model_dir, load_model_dir

    path = Path(source)
    if path.exists():
        folder = find_model_dir(path)
        model, meta = load_model_dir(folder)
        described = f"{folder} ({(meta.get('model') or {}).get('name', 'model')})"
    else:
        meta = {}
        from oarkit.core.registry import create_model, model_info

        model_info(str(source))  # an unknown name fails here, with the closest names
        model = create_model(str(source), pretrained=True)
        described = f"{source} (released weights)"
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, described, meta


class DistillTask(TaskWrapper):
    """A kit's task whose training loss adds a frozen teacher's soft targets (see the module docstring).

    Args:
        task: the kit's task (the student's).
        teacher: a run or model directory, or a registry name.
        temperature: the softmax temperature of both sets of logits.
        alpha: the weight of the distillation term; the task's loss gets ``1 - alpha``.
        method: the name meta.json records (``kd``, ``ssld``, ``feature``).
        pairs: ``[(student_layer, teacher_layer), ...]`` whose features the student imitates (``distill=feature``).
        feature_weight: the weight of the feature term.
        unlabeled_root: a folder of unlabeled images; each step adds the soft-target term on a batch of them
            (``distill=ssld``; the task must take unlabeled data, :meth:`Task.unlabeled_dataset`).
        seed: the seed of the unlabeled batches' order.
    """

    def __init__(self, task: Task, *, teacher: str | Path, temperature: float = 4.0, alpha: float = 0.5,
                 method: str = "kd", pairs: Sequence[tuple[str, str]] = (), feature_weight: float = 1.0,
                 unlabeled_root: str | Path | None = None, seed: int = 0) -> None:
        super().__init__(task)
        self.teacher_source = str(teacher)
        self.temperature, self.alpha, self.method = float(temperature), float(alpha), method
        self.features = FeatureImitation(pairs)
        self.feature_weight = float(feature_weight)
        self.unlabeled_root, self.seed = (str(unlabeled_root) if unlabeled_root else None), int(seed)
        self.unlabeled: Any = None
        self.unlabeled_batch = 8
        self.teacher: nn.Module | None = None
        self.teacher_name = ""
        self.step = 0

    @property
    def extras(self) -> nn.Module:
        """What trains beside the student: the feature adapters."""
        return self.features

    def setup(self, data: DataModule) -> nn.Module:
        student = self.inner.setup(data)
        self.teacher, self.teacher_name, teacher_meta = load_teacher(self.teacher_source)
        self.inner.prepare_distill_teacher(self.teacher, teacher_meta)
        if self.features.pairs:
            self._build_adapters(student)
        if self.unlabeled_root:
            self.unlabeled = self.inner.unlabeled_dataset(data, self.unlabeled_root)
            self.unlabeled_batch = int(getattr(data, "batch_size", 0) or 8)
            if len(self.unlabeled) == 0:
                raise ConfigError(f"distill.unlabeled_root={self.unlabeled_root!r} holds no images")
        logger.info("distill=%s: teacher %s, temperature %g, alpha %g%s%s", self.method, self.teacher_name,
                    self.temperature, self.alpha,
                    f", {len(self.features.pairs)} feature pairs" if self.features.pairs else "",
                    f", {len(self.unlabeled)} unlabeled images" if self.unlabeled is not None else "")
        return student

    def _build_adapters(self, student: nn.Module) -> None:
        """Size the feature adapters from one eval-mode forward of both models on the task's example inputs."""
        inputs = self.inner.example_inputs()
        was_training = student.training
        student.eval()
        try:
            with torch.no_grad(), record_calls(student, [s for s, _ in self.features.pairs]) as s_calls, \
                    record_calls(self.teacher, [t for _, t in self.features.pairs]) as t_calls:
                student(*inputs)
                self.teacher(*inputs)
        finally:
            student.train(was_training)
        self.features.build(s_calls[-1].layers, t_calls[-1].layers)

    def callbacks(self) -> list[Any]:
        return [*self.inner.callbacks(), ExtrasState(self)]

    def parameter_groups(self, model: nn.Module, *, decay_norm_and_bias: bool = False) -> list[dict[str, Any]] | None:
        groups = self.inner.parameter_groups(model, decay_norm_and_bias=decay_norm_and_bias)
        return extras_groups(self, model, groups, decay_norm_and_bias)

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        if self.teacher is None:
            raise ConfigError(f"distill={self.method}: the task was not set up (DistillTask.setup loads the teacher)")
        kit_layers = self.inner.distill_layers(model)
        with record_calls(model, [*kit_layers, *(s for s, _ in self.features.pairs)]) as calls:
            losses = self.inner.training_step(model, batch)
        if not calls:
            raise ConfigError(f"distill={self.method}: {type(self.inner).__name__}.training_step never called the "
                              "model it was given, so there is nothing to distill")
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        if next(self.teacher.parameters()).device != device:
            self.teacher.to(device)
        teacher_layers = self.inner.distill_layers(self.teacher)
        soft, imitation = [], []
        for call in calls:
            with torch.no_grad(), record_calls(self.teacher, [*teacher_layers, *(t for _, t in self.features.pairs)]
                                               ) as t_calls:
                self.teacher(*call.args, **call.kwargs)
            taught = t_calls[-1]
            soft += self._soft_terms(call_outputs(call, kit_layers), call_outputs(taught, teacher_layers))
            if self.features.pairs:
                imitation.append(self.features(call.layers, taught.layers))
        if self.unlabeled is not None:
            soft += self._unlabeled_terms(model, device)
        self.step += 1
        distill = torch.stack(soft).mean()
        total = (1.0 - self.alpha) * losses["loss"] + self.alpha * distill
        logs = {"task_loss": losses["loss"].detach(), "kd_loss": distill.detach()}
        if imitation:
            feature = torch.stack(imitation).mean()
            total = total + self.feature_weight * feature
            logs["feature_loss"] = feature.detach()
        return {**losses, "loss": total, **logs}

    def _soft_terms(self, student_out: Any, teacher_out: Any) -> list[torch.Tensor]:
        pairs = zip(self.inner.distill_logits(student_out), self.inner.distill_logits(teacher_out), strict=True)
        return [kd_loss(*self.inner.align_distill_logits(s, t.detach(), dim), self.temperature, dim)
                for (s, dim), (t, _) in pairs]

    def _unlabeled_terms(self, model: nn.Module, device: torch.device) -> list[torch.Tensor]:
        """The soft-target terms on a batch of unlabeled images; which images is fixed by the seed and the step,
        so a resumed run draws the same ones."""
        assert self.teacher is not None
        picks = torch.randint(len(self.unlabeled), (self.unlabeled_batch,),
                              generator=torch.Generator().manual_seed(self.seed * 1_000_003 + self.step))
        images = torch.stack([torch.as_tensor(self.unlabeled[int(i)]) for i in picks]).to(device)
        student_out = model(images)
        with torch.no_grad():
            teacher_out = self.teacher(images)
        return self._soft_terms(student_out, teacher_out)

    def meta(self) -> dict[str, Any]:
        record: dict[str, Any] = {"method": self.method, "teacher": self.teacher_name or self.teacher_source,
                                  "temperature": self.temperature, "alpha": self.alpha}
        if self.features.pairs:
            record.update(pairs=[list(p) for p in self.features.pairs], feature_weight=self.feature_weight)
        if self.unlabeled_root:
            record["unlabeled_root"] = self.unlabeled_root
        return {**self.inner.meta(), "distill": record}


class KnowledgeDistillation:
    """The ``distill=kd | ssld | feature`` config groups: which teacher, how soft, how much (see
    :class:`DistillTask`).

    Raises:
        ConfigError: a temperature that is not positive, an alpha outside [0, 1], a teacher that is neither an
            existing folder nor a registry name, malformed feature pairs, an unlabeled folder that does not exist.
    """

    def __init__(self, teacher: str, *, temperature: float = 4.0, alpha: float = 0.5, method: str = "kd",
                 pairs: Any = None, feature_weight: float = 1.0, unlabeled_root: str | None = None,
                 seed: int = 0) -> None:
        if not teacher or str(teacher) == "???":
            raise ConfigError("distill.teacher is required: a run directory, a model directory or a registry name")
        if float(temperature) <= 0:
            raise ConfigError(f"distill.temperature must be positive, got {temperature}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise ConfigError(f"distill.alpha must be in [0, 1] (the weight of the distillation term), got {alpha}")
        if float(feature_weight) < 0:
            raise ConfigError(f"distill.feature_weight must be >= 0, got {feature_weight}")
        if unlabeled_root and not Path(unlabeled_root).is_dir():
            raise ConfigError(f"distill.unlabeled_root={unlabeled_root!r} is not a folder; give a folder of images "
                              "(any layout, searched recursively)")
        self.pairs = parse_pairs(pairs)
        if method == "feature" and not self.pairs:
            raise ConfigError("distill=feature needs distill.pairs=[[student_layer, teacher_layer], ...] (module "
                              "names, as model.named_modules() lists them)")
        if not Path(teacher).exists():
            from oarkit.core.errors import UnknownNameError
            from oarkit.core.registry import model_info

            try:
                model_info(str(teacher))
            except UnknownNameError as err:
                raise ConfigError(f"distill.teacher={teacher!r} is neither an existing run or model directory nor a "
                                  f"registered model: {err}") from err
        self.teacher, self.temperature, self.alpha = str(teacher), float(temperature), float(alpha)
        self.method, self.feature_weight, self.unlabeled_root, self.seed = (method, float(feature_weight),
                                                                            unlabeled_root or None, int(seed))

    def wrap_task(self, task: Task) -> DistillTask:
        return DistillTask(task, teacher=self.teacher, temperature=self.temperature, alpha=self.alpha,
                           method=self.method, pairs=self.pairs, feature_weight=self.feature_weight,
                           unlabeled_root=self.unlabeled_root, seed=self.seed)

    def callbacks(self) -> list[Any]:
        return []
