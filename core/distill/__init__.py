"""oarkit.core.distill: knowledge distillation inside the normal Trainer.

:class:`KnowledgeDistillation` is the ``distill=kd | ssld | feature`` config groups: it wraps a kit's task
(:class:`DistillTask`) so that each training step adds a frozen teacher's soft targets (and, for ``feature``, the
imitation of its features) to the task's own loss. :class:`MutualLearning` is ``distill=dml``: two students
learning from each other. The kit says which outputs are logits through
:meth:`oarkit.core.engine.task.Task.distill_logits` (and :meth:`~oarkit.core.engine.task.Task.distill_layers`
where they come from inner layers); the engine never learns which kit it trains.
"""

from oarkit.core.distill.dml import MutualLearning, MutualLearningTask
from oarkit.core.distill.kd import DistillTask, KnowledgeDistillation, kd_loss

__all__ = ["DistillTask", "KnowledgeDistillation", "MutualLearning", "MutualLearningTask", "kd_loss"]
