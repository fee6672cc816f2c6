"""The task kits and their task ids: the one place the command line and the loaders learn what a kit offers.

A task id names what a model does — ``clas``, ``seg``, ``det``, ``ocr/det``, ``ocr/rec``, ``ocr/cls``,
``nlp/text_classification``, ... — in its model card, its Task and its run's meta.json. Each kit registers a
:class:`TaskEntry` per task id at import; the command line dispatches on the id and holds no kit knowledge.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oarkit.core.errors import OarkitError, did_you_mean

KITS = ("clas", "seg", "det", "ocr", "nlp")
_loaded = False


@dataclass(frozen=True)
class TaskEntry:
    """What one task id offers the generic tools.

    Attributes:
        task_id: ``clas``, ``seg``, ``nlp/text_classification``, ...
        task_class: the Task built for a run that has no task config (a run trained from Python).
        predictor: builds the predictor from a run directory, registry name or export folder (and options).
        predict_options: the command line's predict options this predictor takes (``("topk",)``).
        datasets: preparers of datasets that ship offline, by name (``{"digits": prepare_digits}``).
        card_metric: the model-card metric ``oarkit models`` shows (``imagenet_top1``), if any.
        pictures: files of a run directory ``oarkit summary`` lists when present (``confusion_matrix.png``).
    """

    task_id: str
    task_class: Callable[[], Any]
    predictor: Callable[..., Any]
    predict_options: tuple[str, ...] = ()
    datasets: dict[str, Callable[[str], Any]] = field(default_factory=dict)
    card_metric: str = ""
    pictures: tuple[str, ...] = ()

    @property
    def kit(self) -> str:
        """The kit that owns the task id (its first component)."""
        return self.task_id.split("/", 1)[0]


_ENTRIES: dict[str, TaskEntry] = {}


def register_task(entry: TaskEntry) -> TaskEntry:
    """Declare a task id; a second registration of the same id is an error."""
    if entry.task_id in _ENTRIES and _ENTRIES[entry.task_id] != entry:
        raise OarkitError(f"task id {entry.task_id!r} is already registered")
    if entry.kit not in KITS:
        raise OarkitError(f"task id {entry.task_id!r} must start with a kit name, one of {KITS}")
    _ENTRIES[entry.task_id] = entry
    return entry


def load_all() -> None:
    """Import every installed kit once (their imports register their models, namespaces and task ids)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for kit in KITS:
        if importlib.util.find_spec(f"oarkit.{kit}") is not None:
            importlib.import_module(f"oarkit.{kit}")


def task_entries() -> dict[str, TaskEntry]:
    """Every registered task id and its entry."""
    load_all()
    return dict(_ENTRIES)


def task_entry(task_id: str) -> TaskEntry:
    """The entry of a task id.

    Raises:
        OarkitError: unknown id; the message lists the closest ones.
    """
    load_all()
    if task_id in _ENTRIES:
        return _ENTRIES[task_id]
    raise OarkitError(f"unknown task id {task_id!r}.{did_you_mean(task_id, _ENTRIES)} "
                      f"Known: {', '.join(sorted(_ENTRIES))}")


def normalize_task_id(meta: dict[str, Any]) -> str:
    """The task id of a meta.json or deploy manifest, including those written before task ids existed
    (``{"task": "nlp", "nlp_task": "text_classification"}``)."""
    task = str(meta.get("task", ""))
    if task == "nlp" and meta.get("nlp_task"):
        return f"nlp/{meta['nlp_task']}"
    return task
