"""Soft-target knowledge distillation (Hinton et al. 2015) as a task wrapper.

The ``distill=kd`` config group instantiates :class:`KnowledgeDistillation`; the config builder asks it to wrap
the kit's task. :class:`DistillTask` builds the student as the kit does, loads the teacher (a run or model
directory, or a registry name with its released weights), freezes it in eval mode, and on each training step:

1. runs the kit's own ``training_step`` on the student, recording every forward call of the student (its
   inputs and outputs) with a forward hook;
2. runs the teacher on the same inputs, without gradients;
3. adds ``alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T))`` over each pair of logits the kit
   declares (:meth:`~oarkit.core.engine.task.Task.distill_logits`) to ``(1 - alpha)`` times the task's loss.

The teacher is held by the wrapper, not by the model: checkpoints, EMA, export and predictors see the student
alone. meta.json records the method and the teacher.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn

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


def load_teacher(source: str | Path) -> tuple[nn.Module, str]:
    """The teacher model of a run or model directory, or of a registry name (its released weights), in eval
    mode with its parameters frozen; returns it and a description for the logs and meta.json.

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
        from oarkit.core.registry import create_model, model_info

        model_info(str(source))  # an unknown name fails here, with the closest names
        model = create_model(str(source), pretrained=True)
        described = f"{source} (released weights)"
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, described


class DistillTask(TaskWrapper):
    """A kit's task whose training loss adds a frozen teacher's soft targets (see the module docstring).

    Args:
        task: the kit's task (the student's).
        teacher: a run or model directory, or a registry name.
        temperature: the softmax temperature of both sets of logits.
        alpha: the weight of the distillation term; the task's loss gets ``1 - alpha``.
    """

    def __init__(self, task: Task, *, teacher: str | Path, temperature: float = 4.0, alpha: float = 0.5) -> None:
        super().__init__(task)
        self.teacher_source = str(teacher)
        self.temperature, self.alpha = float(temperature), float(alpha)
        self.teacher: nn.Module | None = None
        self.teacher_name = ""

    def setup(self, data: DataModule) -> nn.Module:
        student = self.inner.setup(data)
        self.teacher, self.teacher_name = load_teacher(self.teacher_source)
        logger.info("distill=kd: teacher %s, temperature %g, alpha %g", self.teacher_name, self.temperature,
                    self.alpha)
        return student

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        if self.teacher is None:
            raise ConfigError("distill=kd: the task was not set up (DistillTask.setup loads the teacher)")
        calls: list[tuple[tuple[Any, ...], dict[str, Any], Any]] = []
        handle = model.register_forward_hook(lambda _m, args, kwargs, out: calls.append((args, kwargs, out)),
                                             with_kwargs=True)
        try:
            losses = self.inner.training_step(model, batch)
        finally:
            handle.remove()
        if not calls:
            raise ConfigError(f"distill=kd: {type(self.inner).__name__}.training_step never called the model it was "
                              "given, so there is nothing to distill")
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        if next(self.teacher.parameters()).device != device:
            self.teacher.to(device)
        terms = []
        for args, kwargs, student_out in calls:
            with torch.no_grad():
                teacher_out = self.teacher(*args, **kwargs)
            student_logits = self.inner.distill_logits(student_out)
            teacher_logits = self.inner.distill_logits(teacher_out)
            for (s, dim), (t, _) in zip(student_logits, teacher_logits, strict=True):
                terms.append(kd_loss(s, t.detach(), self.temperature, dim))
        distill = torch.stack(terms).mean()
        return {**losses, "loss": (1.0 - self.alpha) * losses["loss"] + self.alpha * distill,
                "task_loss": losses["loss"].detach(), "kd_loss": distill.detach()}

    def meta(self) -> dict[str, Any]:
        return {**self.inner.meta(), "distill": {"method": "kd", "teacher": self.teacher_name or self.teacher_source,
                                                 "temperature": self.temperature, "alpha": self.alpha}}


class KnowledgeDistillation:
    """The ``distill=kd`` config group: which teacher, how soft, how much (see :class:`DistillTask`).

    Raises:
        ConfigError: a temperature that is not positive, an alpha outside [0, 1], a teacher that is neither an
            existing folder nor a registry name.
    """

    def __init__(self, teacher: str, *, temperature: float = 4.0, alpha: float = 0.5) -> None:
        if not teacher or str(teacher) == "???":
            raise ConfigError("distill.teacher is required: a run directory, a model directory or a registry name")
        if float(temperature) <= 0:
            raise ConfigError(f"distill.temperature must be positive, got {temperature}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise ConfigError(f"distill.alpha must be in [0, 1] (the weight of the distillation term), got {alpha}")
        if not Path(teacher).exists():
            from oarkit.core.errors import UnknownNameError
            from oarkit.core.registry import model_info

            try:
                model_info(str(teacher))
            except UnknownNameError as err:
                raise ConfigError(f"distill.teacher={teacher!r} is neither an existing run or model directory nor a "
                                  f"registered model: {err}") from err
        self.teacher, self.temperature, self.alpha = str(teacher), float(temperature), float(alpha)

    def wrap_task(self, task: Task) -> DistillTask:
        return DistillTask(task, teacher=self.teacher, temperature=self.temperature, alpha=self.alpha)

    def callbacks(self) -> list[Any]:
        return []
