"""The task kits and their task ids: the one place the command line and the loaders learn what a kit offers.

A task id names what a model does — ``clas``, ``seg``, ``det``, ``ocr/det``, ``ocr/rec``, ``ocr/cls``,
``nlp/text_classification``, ... — in its model card, its Task and its run's meta.json. Each kit registers a
:class:`TaskEntry` per task id at import, and any command-line verb of its own as a :class:`Command`; the command
line dispatches on the id and holds no kit knowledge.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oarkit.core.errors import OarkitError, did_you_mean

KITS = ("clas", "seg", "det", "ocr", "nlp")
_loaded = False


@dataclass(frozen=True)
class PaddleXRoute:
    """How a task answers PaddleX's basic-serving route of its kind, so that a PaddleX client works unchanged
    against ``oarkit serve`` (which wraps ``result`` in PaddleX's ``logId`` / ``errorCode`` / ``errorMsg``).

    Attributes:
        path: the route (``/image-classification``, ``/ocr``).
        image_field: the request key that holds the base64 image (``image``; ``file`` for ``/ocr``).
        params: PaddleX's request body without the image -> the predictor's request params (``{"topk": 5}``);
            raises ``ValueError`` naming a setting it cannot honour.
        result: one image's predictor result and the RGB image -> PaddleX's ``result`` object.
    """

    path: str
    image_field: str
    params: Callable[[dict[str, Any]], dict[str, Any]]
    result: Callable[[Any, Any], dict[str, Any]]


def paddlex_params(body: dict[str, Any], taken: dict[str, str], ignored: tuple[str, ...] = ()) -> dict[str, Any]:
    """A PaddleX request's settings as predictor params: ``taken`` maps PaddleX's names to the predictor's
    (``{"topk": "topk"}``); ``ignored`` ones change only what PaddleX would draw (``visualize``).

    Raises:
        ValueError: a setting given (not null, not false) that the predictor cannot honour, named.
    """
    params = {taken[k]: v for k, v in body.items() if k in taken and v is not None}
    refused = sorted(k for k, v in body.items() if k not in taken and k not in ignored and v not in (None, False))
    if refused:
        honoured = ", ".join(sorted(taken)) or "none"
        raise ValueError(f"{', '.join(refused)} {'is' if len(refused) == 1 else 'are'} not supported by this "
                         f"route of oarkit serve (settings it takes: {honoured}); leave "
                         f"{'it' if len(refused) == 1 else 'them'} out")
    return params


@dataclass(frozen=True)
class TaskEntry:
    """What one task id offers the generic tools (the command line, ``evaluate_run``, export).

    Attributes:
        task_id: ``clas``, ``seg``, ``nlp/text_classification``, ...
        task_class: the Task built for a run that has no task config (a run trained from Python); ``None`` for a
            task id that nothing trains (a pipeline of exported models, named by its ``pipeline.yaml``).
        predictor: builds the predictor from a run directory, registry name or export folder; called with the
            source, ``device=`` and the options in ``predict_options``.
        predict_options: the command line's predict options this predictor takes (``("topk",)``); the others are
            refused with a clear message.
        export_source: ``(source, pretrained=...) -> ExportSource``: what ``oarkit export`` exports for a run
            directory or registry name; ``None`` when the task cannot be exported yet.
        datasets: preparers of datasets that ship offline, by name (``{"digits": prepare_digits}``); each takes
            the target folder and returns the dataset root.
        card_metric: the model-card metric ``oarkit models`` shows: a metric name or an fnmatch pattern
            (``imagenet_top1``, ``*_miou``); empty for none.
        pictures: files of a run directory ``oarkit summary`` lists when present (``confusion_matrix.png``).
        input_suffixes: file suffixes a folder given to ``oarkit predict`` expands to (``.jpg``, ...); empty: the
            inputs are taken as they are (texts).
        summary: ``meta -> {label: value}``: lines of the task's own for ``oarkit summary``, from the best
            checkpoint's meta.json.
        pipeline_name: a MODEL name that stands for the task's default predictor, built with no weights given
            (``ocr``: ``OCR()``'s default pipeline), taken where no folder of that name exists; empty for none.
        paddlex: the PaddleX serving route the task answers under ``oarkit serve``; ``None`` for none.
        web_export: ``(source, out=Path, quantize=None | "int8") -> Path``: writes the static folder of
            ``oarkit export SOURCE --format web`` (:func:`oarkit.core.export.web.write_web_folder`) and returns it;
            ``None`` when the task does not run in the browser. ``pretrained=False`` is passed for
            ``--random-weights``.
    """

    task_id: str
    task_class: Callable[[], Any] | None
    predictor: Callable[..., Any]
    predict_options: tuple[str, ...] = ()
    export_source: Callable[..., Any] | None = None
    datasets: dict[str, Callable[[str], Any]] = field(default_factory=dict)
    card_metric: str = ""
    pictures: tuple[str, ...] = ()
    input_suffixes: tuple[str, ...] = ()
    summary: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    pipeline_name: str = ""
    paddlex: PaddleXRoute | None = None
    web_export: Callable[..., Path] | None = None

    @property
    def kit(self) -> str:
        """The kit that owns the task id (its first component)."""
        return self.task_id.split("/", 1)[0]

    def reference_metric(self, metrics: dict[str, float]) -> tuple[str, float] | None:
        """The card metric among a model card's ``metrics``: ``(name, value)``, or ``None``."""
        if not self.card_metric:
            return None
        name = next((k for k in metrics if fnmatch.fnmatchcase(k, self.card_metric)), None)
        return (name, metrics[name]) if name is not None else None


@dataclass(frozen=True)
class Command:
    """A command-line verb a kit adds (``oarkit train-tokenizer``), declared instead of imported by core.

    Attributes:
        name: the verb.
        help: one line for ``oarkit --help``.
        add_arguments: adds the verb's arguments to its ``argparse`` sub-parser.
        run: runs the verb with the parsed arguments; returns the exit status.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


_ENTRIES: dict[str, TaskEntry] = {}
_COMMANDS: dict[str, Command] = {}


def register_task(entry: TaskEntry) -> TaskEntry:
    """Declare a task id; a second registration of the same id is an error."""
    if entry.task_id in _ENTRIES and _ENTRIES[entry.task_id] != entry:
        raise OarkitError(f"task id {entry.task_id!r} is already registered")
    if entry.kit not in KITS:
        raise OarkitError(f"task id {entry.task_id!r} must start with a kit name, one of {KITS}")
    owner = next((e.task_id for e in _ENTRIES.values() if entry.pipeline_name and e.task_id != entry.task_id
                  and e.pipeline_name == entry.pipeline_name), None)
    if owner:
        raise OarkitError(f"pipeline name {entry.pipeline_name!r} is already the task id {owner!r}'s")
    _ENTRIES[entry.task_id] = entry
    return entry


def register_command(command: Command) -> Command:
    """Declare a kit's command-line verb; a second registration of the same verb is an error."""
    if command.name in _COMMANDS and _COMMANDS[command.name] != command:
        raise OarkitError(f"command {command.name!r} is already registered")
    _COMMANDS[command.name] = command
    return command


def commands() -> dict[str, Command]:
    """Every verb the installed kits add to the command line."""
    load_all()
    return dict(_COMMANDS)


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


def pipeline_task_id(source: str | Path) -> str | None:
    """The task id whose default pipeline ``source`` names (``ocr``), or ``None``: a folder of that name that
    holds a model (a run, model, export or pipeline folder) is that model, not the pipeline name."""
    load_all()
    task_id = next((e.task_id for e in _ENTRIES.values() if e.pipeline_name and e.pipeline_name == str(source)),
                   None)
    if task_id is None or not Path(source).exists():
        return task_id
    from oarkit.core.deploy.manifest import is_export_dir
    from oarkit.core.deploy.pipeline import is_pipeline_dir
    from oarkit.core.engine.checkpoint import find_model_dir

    if is_pipeline_dir(source) or is_export_dir(source):
        return None
    try:
        find_model_dir(source)
    except OarkitError:
        return task_id
    return None


def normalize_task_id(meta: dict[str, Any]) -> str:
    """The task id of a meta.json or deploy manifest, including those written before task ids existed
    (``{"task": "nlp", "nlp_task": "text_classification"}``; a manifest's ``preprocessing.task``)."""
    task = str(meta.get("task") or "")
    if task == "nlp":
        sub = meta.get("nlp_task") or (meta.get("preprocessing") or {}).get("task")
        if sub:
            return f"nlp/{sub}"
    return task


def source_task_id(source: str | Path) -> tuple[str, str]:
    """The task id of what the tools are given, and where it was read.

    Args:
        source: an export folder (its ``deploy.yaml``), a pipeline folder (its ``pipeline.yaml``), a run or
            model directory (its ``meta.json``), a registry name (its model card) or a task's pipeline name
            (``ocr``: :attr:`TaskEntry.pipeline_name`).

    Returns:
        ``(task_id, where)``; ``where`` names the file or card, for messages.

    Raises:
        OarkitError: ``source`` is none of these.
    """
    from oarkit.core.deploy.manifest import DEPLOY_FILE, is_export_dir, read_manifest
    from oarkit.core.deploy.pipeline import PIPELINE_FILE, is_pipeline_dir, read_pipeline

    path = Path(source)
    pipeline = pipeline_task_id(source)
    if pipeline:
        return pipeline, f"the default {source} pipeline"
    if is_pipeline_dir(path):
        return read_pipeline(path).task, str(path / PIPELINE_FILE)
    if is_export_dir(path):
        manifest = read_manifest(path)
        return normalize_task_id({"task": manifest.task, "preprocessing": manifest.preprocessing}), \
            str(path / DEPLOY_FILE)
    if path.exists():
        from oarkit.core.engine.checkpoint import META_FILE, find_model_dir, read_meta

        folder = find_model_dir(path)
        return normalize_task_id(read_meta(folder)), str(folder / META_FILE)
    from oarkit.core.errors import UnknownNameError
    from oarkit.core.registry import model_info

    try:
        return model_info(str(source)).task, f"the model card of {source}"
    except UnknownNameError as err:
        raise OarkitError(f"{source!r} is neither an existing run directory nor a registered model: {err}") from err


def source_entry(source: str | Path) -> TaskEntry:
    """The :class:`TaskEntry` of an export folder, run or model directory, or registry name.

    Raises:
        OarkitError: the source names no task id, or one that no installed kit registers.
    """
    task_id, where = source_task_id(source)
    if not task_id:
        raise OarkitError(f"{where} names no task id; it was not written by oarkit's Trainer or exporters")
    load_all()
    if task_id not in _ENTRIES:
        raise OarkitError(f"{where} names the task id {task_id!r}, which no installed kit registers."
                          f"{did_you_mean(task_id, _ENTRIES)} Known: {', '.join(sorted(_ENTRIES))}")
    return _ENTRIES[task_id]
