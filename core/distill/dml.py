"""Deep mutual learning (Zhang et al. 2018; PaddleClas DML, the student part of PP-OCR's CML): ``distill=dml``.

Two students of the recipe's architecture learn together from the labels and from each other: each adds
``alpha * T^2 * KL(other || self)`` over the kit's logits (:meth:`~oarkit.core.engine.task.Task.distill_logits`)
to ``(1 - alpha)`` times its task loss, the other's side detached. The peer is built by the kit's own ``setup``
under another seed, runs the kit's ``training_step`` on the same batch with the same random draws (augmentation
inside the step, dropout), trains with the same optimizer, and is kept in the resumable training state only: the
run's weights, ``oarkit eval``, export and predictors are the first student's.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from oarkit.core.distill.extras import ExtrasState, extras_groups
from oarkit.core.distill.kd import kd_loss
from oarkit.core.distill.record import call_outputs, record_calls
from oarkit.core.engine.seeding import rng_state, set_rng_state
from oarkit.core.engine.task import DataModule, Task, TaskWrapper
from oarkit.core.errors import ConfigError

logger = logging.getLogger(__name__)


class MutualLearningTask(TaskWrapper):
    """A kit's task trained as two mutually distilling students (see the module docstring).

    Args:
        task: the kit's task.
        temperature: the softmax temperature of both students' logits.
        alpha: the weight of the mutual term; each task loss gets ``1 - alpha``.
        peer_seed: the seed the peer's initial weights are drawn with.
    """

    def __init__(self, task: Task, *, temperature: float = 1.0, alpha: float = 0.5, peer_seed: int = 1) -> None:
        super().__init__(task)
        self.temperature, self.alpha, self.peer_seed = float(temperature), float(alpha), int(peer_seed)
        self.peer: nn.Module | None = None

    @property
    def extras(self) -> nn.Module:
        """What trains beside the student: the peer."""
        return self.peer if self.peer is not None else nn.Module()

    def setup(self, data: DataModule) -> nn.Module:
        student = self.inner.setup(data)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.peer_seed)
            self.peer = self.inner.setup(data)
        logger.info("distill=dml: two %s students, temperature %g, alpha %g", type(student).__name__,
                    self.temperature, self.alpha)
        return student

    def callbacks(self) -> list[Any]:
        return [*self.inner.callbacks(), ExtrasState(self)]

    def parameter_groups(self, model: nn.Module, *, decay_norm_and_bias: bool = False) -> list[dict[str, Any]] | None:
        groups = self.inner.parameter_groups(model, decay_norm_and_bias=decay_norm_and_bias)
        peer = None  # the peer is grouped as the task groups the student (layer-wise LR decay, say)
        if groups is not None and self.peer is not None:
            peer = self.inner.parameter_groups(self.peer, decay_norm_and_bias=decay_norm_and_bias)
        return extras_groups(self, model, groups, decay_norm_and_bias, extra=peer)

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        if self.peer is None:
            raise ConfigError("distill=dml: the task was not set up (MutualLearningTask.setup builds the peer)")
        layers = self.inner.distill_layers(model)
        draws = rng_state()
        with record_calls(model, layers) as calls:
            losses = self.inner.training_step(model, batch)
        after = rng_state()
        set_rng_state(draws)  # the peer sees the batch as the student did
        self.peer.train(model.training)
        peer_layers = self.inner.distill_layers(self.peer)
        with record_calls(self.peer, peer_layers) as peer_calls:
            peer_losses = self.inner.training_step(self.peer, batch)
        set_rng_state(after)
        if not calls or len(calls) != len(peer_calls):
            raise ConfigError(f"distill=dml: {type(self.inner).__name__}.training_step called the two students "
                              f"{len(calls)} and {len(peer_calls)} times; it must call the model it is given")
        own, peer = [], []
        for call, peer_call in zip(calls, peer_calls):
            mine = self.inner.distill_logits(call_outputs(call, layers))
            theirs = self.inner.distill_logits(call_outputs(peer_call, peer_layers))
            for (s, dim), (p, _) in zip(mine, theirs, strict=True):
                own.append(kd_loss(s, p.detach(), self.temperature, dim))
                peer.append(kd_loss(p, s.detach(), self.temperature, dim))
        mutual, peer_mutual = torch.stack(own).mean(), torch.stack(peer).mean()
        keep = 1.0 - self.alpha
        total = keep * (losses["loss"] + peer_losses["loss"]) + self.alpha * (mutual + peer_mutual)
        return {**losses, "loss": total, "task_loss": losses["loss"].detach(),
                "peer_loss": peer_losses["loss"].detach(), "dml_loss": mutual.detach()}

    def meta(self) -> dict[str, Any]:
        return {**self.inner.meta(), "distill": {"method": "dml", "peer": type(self.peer).__name__,
                                                 "temperature": self.temperature, "alpha": self.alpha}}


class MutualLearning:
    """The ``distill=dml`` config group (see :class:`MutualLearningTask`).

    Raises:
        ConfigError: a temperature that is not positive, an alpha outside [0, 1].
    """

    def __init__(self, *, temperature: float = 1.0, alpha: float = 0.5, peer_seed: int = 1) -> None:
        if float(temperature) <= 0:
            raise ConfigError(f"distill.temperature must be positive, got {temperature}")
        if not 0.0 <= float(alpha) <= 1.0:
            raise ConfigError(f"distill.alpha must be in [0, 1] (the weight of the mutual term), got {alpha}")
        self.temperature, self.alpha, self.peer_seed = float(temperature), float(alpha), int(peer_seed)

    def wrap_task(self, task: Task) -> MutualLearningTask:
        return MutualLearningTask(task, temperature=self.temperature, alpha=self.alpha, peer_seed=self.peer_seed)

    def callbacks(self) -> list[Any]:
        return []
