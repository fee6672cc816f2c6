"""Label assigners of the anchor-free detectors: ATSS for the warm-up epochs, then the task-aligned assigner.

A detector that switches between them (PP-YOLOE, PicoDet) keeps ``static_assigner_epoch`` and learns the current
epoch through ``set_epoch(epoch)``, called by :class:`AssignerEpochCallback` (see :mod:`oarkit.det.models`).
"""

from oarkit.det.assigners.atss import ATSSAssigner
from oarkit.det.assigners.schedule import AssignerEpochCallback
from oarkit.det.assigners.task_aligned import TaskAlignedAssigner

__all__ = ["ATSSAssigner", "AssignerEpochCallback", "TaskAlignedAssigner"]
