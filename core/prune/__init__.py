"""Structured (channel) pruning to a FLOPs target as a task wrapper: the ``prune=`` config group."""

from oarkit.core.prune.channels import METHODS, PruneResult, prune_channels, prune_to_flops
from oarkit.core.prune.flops import count_flops
from oarkit.core.prune.shapes import apply_pruned_shapes, pruned_shapes, snapshot
from oarkit.core.prune.task import PruneTask, StructuredPruning

__all__ = ["METHODS", "PruneResult", "PruneTask", "StructuredPruning", "apply_pruned_shapes", "count_flops",
           "prune_channels", "prune_to_flops", "pruned_shapes", "snapshot"]
