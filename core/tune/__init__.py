"""Hyperparameter search on Optuna: ``oarkit tune -c RECIPE --trials N --space KEY=LOW:HIGH[:log] ...``.

Each trial is a normal Trainer run of the recipe with the trial's values as overrides, in ``<out>/trial_<n>``,
scored by its best validation main metric and pruned early through :class:`PruningCallback`. The study lives in
a database (``<out>/study.db`` by default, or any ``--storage`` URL Optuna takes), so re-running a command
resumes it and several processes share one. Optuna is optional: ``pip install "oarkit[tune]"``.
"""

from oarkit.core.tune.report import write_reports
from oarkit.core.tune.space import SearchParam, check_space, parse_space, parse_space_entry, space_overrides
from oarkit.core.tune.study import (
    PRUNERS,
    SAMPLERS,
    PruningCallback,
    TrialObjective,
    TuneResult,
    import_optuna,
    make_pruner,
    make_sampler,
    tune,
)

__all__ = [
    "PRUNERS", "SAMPLERS", "PruningCallback", "SearchParam", "TrialObjective", "TuneResult", "check_space",
    "import_optuna", "make_pruner", "make_sampler", "parse_space", "parse_space_entry", "space_overrides", "tune",
    "write_reports",
]
