"""Structured (channel) pruning to a FLOPs target as a task wrapper: the ``prune=`` config group; sensitivity
analysis (``oarkit prune-sensitivity``) and layer-wise ratios from it."""

from oarkit.core.prune.channels import METHODS, Prunable, PruneResult, find_prunable, prune_channels, prune_to_flops
from oarkit.core.prune.flops import count_flops, module_flops
from oarkit.core.prune.layerwise import SensitivityTable
from oarkit.core.prune.shapes import apply_pruned_shapes, pruned_shapes, snapshot
from oarkit.core.prune.task import PruneTask, StructuredPruning

__all__ = ["METHODS", "Prunable", "PruneResult", "PruneTask", "SensitivityTable", "StructuredPruning",
           "apply_pruned_shapes", "count_flops", "find_prunable", "module_flops", "prune_channels", "prune_to_flops",
           "pruned_shapes", "snapshot"]
