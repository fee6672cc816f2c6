"""oarkit.core.distill: knowledge distillation inside the normal Trainer.

:class:`KnowledgeDistillation` is the ``distill=kd`` config group: it wraps a kit's task (:class:`DistillTask`)
so that each training step adds the teacher's soft targets to the task's own loss. The kit says which of its
model outputs are logits through :meth:`oarkit.core.engine.task.Task.distill_logits`; the engine never learns
which kit it trains.
"""

from oarkit.core.distill.kd import DistillTask, KnowledgeDistillation, kd_loss

__all__ = ["DistillTask", "KnowledgeDistillation", "kd_loss"]
