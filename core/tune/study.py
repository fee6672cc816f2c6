"""The study of ``oarkit tune``: each trial a normal Trainer run of the recipe, pruned through a callback.

A trial composes the recipe exactly as ``tools/train.py`` does (:func:`~oarkit.core.config.load_config` plus
:func:`~oarkit.core.config.build_trainer`) with its values as overrides and its own run directory
``<out>/trial_<n>``; the objective is the run's best validation main metric, in the direction of the metric's
``higher_is_better``. The study lives in a database (``<out>/study.db`` by default), so re-running the same
command resumes it and several processes on one storage share it.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from oarkit.core.engine.callbacks import Callback
from oarkit.core.errors import ConfigError, TrainingError, did_you_mean
from oarkit.core.tune.space import SearchParam, check_space, format_value, parse_space, space_overrides

if TYPE_CHECKING:
    from oarkit.core.engine.trainer import Trainer

logger = logging.getLogger(__name__)

PRUNERS = ("median", "hyperband", "none")
SAMPLERS = ("tpe", "random")
#: the trial states that count toward ``--trials`` (a trial still running in another process does not)
FINISHED_STATES = ("COMPLETE", "PRUNED", "FAIL")
#: seconds between a running trial's heartbeats; a trial silent for three of them (its process was killed) is
#: marked failed when the study is next opened
HEARTBEAT_S = 60


def import_optuna() -> ModuleType:
    """The ``optuna`` module, or :class:`~oarkit.core.deploy.optional.MissingDependencyError` with the fix."""
    from oarkit.core.deploy.optional import MissingDependencyError

    try:
        import optuna
    except ImportError as err:
        raise MissingDependencyError(f"oarkit tune needs the 'optuna' package, which is not installed ({err}). "
                                     f'Install it with: pip install "oarkit[tune]" (or pip install optuna)') from err
    return optuna


class PruningCallback(Callback):
    """Reports the main validation metric to an Optuna trial at each evaluation; stops the run when it is pruned.

    The step reported is ``trainer.global_step``, so that epoch and iteration recipes report alike. When the
    pruner says so the callback sets ``trainer.should_stop`` (the loop ends after this evaluation, with its
    checkpoints) and remembers the step; the objective then raises ``optuna.TrialPruned``.
    """

    def __init__(self, trial: Any) -> None:
        self.trial = trial
        self.pruned_at: int | None = None
        self.reported: list[tuple[int, float]] = []

    @property
    def pruned(self) -> bool:
        """Whether the pruner stopped the run."""
        return self.pruned_at is not None

    def on_validation_end(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        value = metrics.get(trainer.main_indicator)
        if value is None or not math.isfinite(float(value)):
            return
        step = int(trainer.global_step)
        self.trial.report(float(value), step)
        self.reported.append((step, float(value)))
        if self.pruned_at is None and self.trial.should_prune():
            self.pruned_at = step
            logger.info("trial %d: pruned at step %d (epoch %d, %s=%.4g)", self.trial.number, step,
                        trainer.epoch + 1, trainer.main_indicator, float(value))
            trainer.should_stop = True


class TrialObjective:
    """The objective of the study: one Trainer run of the recipe with a trial's values.

    Args:
        recipe: the recipe path or packaged name.
        overrides: the command line's ``key=value`` overrides, applied before the trial's values.
        params: the search space.
        out: the study's output directory; each trial trains in ``<out>/trial_<n>``.
    """

    def __init__(self, recipe: str | Path, overrides: Sequence[str], params: Sequence[SearchParam],
                 out: Path) -> None:
        self.recipe, self.overrides, self.params, self.out = recipe, list(overrides), list(params), out

    def __call__(self, trial: Any) -> float:
        import optuna

        from oarkit.core.config import build_trainer, load_config

        values = {p.key: p.suggest(trial) for p in self.params}
        run_dir = self.out / f"trial_{trial.number}"
        trial.set_user_attr("run_dir", str(run_dir))
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        shown = ", ".join(f"{k}={format_value(v)}" for k, v in values.items())
        logger.info("trial %d: %s -> %s", trial.number, shown, run_dir)
        try:
            cfg = load_config(self.recipe, [*self.overrides, *space_overrides(values), f"output_dir={run_dir}"])
            pruning = PruningCallback(trial)
            trainer = build_trainer(cfg, callbacks=[pruning])
            try:
                summary = trainer.fit()
            except TrainingError as err:  # diverged (a non-finite loss): this trial fails, the study goes on
                trial.set_user_attr("error", str(err))
                return float("nan")
        except ConfigError as err:  # the space is wrong for this recipe: every trial would fail, stop the study
            raise ConfigError(f"trial {trial.number} ({shown}): {err}") from err
        trial.set_user_attr("epochs_run", summary.get("epochs_run"))
        trial.set_user_attr("steps_run", int(trainer.global_step))
        if pruning.pruned:
            trial.set_user_attr("pruned_at", pruning.pruned_at)
            raise optuna.TrialPruned(f"pruned at step {pruning.pruned_at}")
        if summary.get("best_metric") is None:
            raise ConfigError(f"trial {trial.number} evaluated nothing: tune ranks trials by the validation "
                              f"{summary.get('main_indicator')}, so the recipe needs a validation split")
        return float(summary["best_metric"])


@dataclass
class TuneResult:
    """What a study holds after this process's trials.

    Attributes:
        study_name: the study's name in its storage.
        storage: the database URL.
        out: the output directory (trial runs and reports).
        main_indicator: the metric the study ranks by.
        direction: ``maximize`` or ``minimize``.
        states: the number of trials in each state, over the whole study.
        best_number: the best trial's number (``None``: no trial completed).
        best_value: its metric.
        best_params: its values.
        files: the reports written, by name.
    """

    study_name: str
    storage: str
    out: Path
    main_indicator: str
    direction: str
    states: dict[str, int] = field(default_factory=dict)
    best_number: int | None = None
    best_value: float | None = None
    best_params: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


def make_pruner(pruner: str | Any) -> Any:
    """An Optuna pruner by name (``median``, ``hyperband``, ``none``); a pruner object is returned as it is."""
    optuna = import_optuna()
    if not isinstance(pruner, str):
        return pruner
    if pruner == "median":
        return optuna.pruners.MedianPruner()
    if pruner == "hyperband":
        return optuna.pruners.HyperbandPruner()
    if pruner == "none":
        return optuna.pruners.NopPruner()
    raise ConfigError(f"--pruner {pruner!r} is not one of {', '.join(PRUNERS)}.{did_you_mean(pruner, PRUNERS)}")


def make_sampler(sampler: str | Any, seed: int | None = None) -> Any:
    """An Optuna sampler by name (``tpe``, ``random``) seeded with ``seed``; a sampler object is returned as is."""
    optuna = import_optuna()
    if not isinstance(sampler, str):
        return sampler
    if sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ConfigError(f"--sampler {sampler!r} is not one of {', '.join(SAMPLERS)}.{did_you_mean(sampler, SAMPLERS)}")


def open_storage(url: str) -> Any:
    """An Optuna RDB storage on ``url`` (any SQLAlchemy URL) with heartbeats, so killed trials end as failed.

    SQLite waits up to a minute for a lock, which several processes on one file need. Processes that open a new
    database at the same moment race to create its tables: on SQLite :func:`creation_lock` serialises them, on
    a server the loser's error is retried twice.
    """
    optuna = import_optuna()
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    attempts = 1 if url.startswith("sqlite") else 3
    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna 5; they do what we need
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=HEARTBEAT_S,
                                                  grace_period=3 * HEARTBEAT_S)
        except (SQLAlchemyError, ImportError, ValueError) as err:
            if attempt + 1 < attempts and isinstance(err, SQLAlchemyError) and not isinstance(err, ArgumentError):
                time.sleep(1.0 + attempt)  # another process is creating the tables
                continue
            raise ConfigError(f"--storage {url!r} cannot be opened: {err}. Give a database URL such as "
                              f"sqlite:///study.db or postgresql://user:password@host/db") from err
    raise AssertionError("unreachable")


@contextmanager
def creation_lock(url: str) -> Iterator[None]:
    """Hold an exclusive file lock beside a SQLite database while it and its study are created.

    Two processes that create the tables of one new SQLite file at once fail (``table studies already
    exists``); the lock makes the second wait for the first. Other databases pass through unlocked.
    """
    from sqlalchemy.engine import make_url

    database = make_url(url).database if url.startswith("sqlite") else None
    path = Path(database) if database and database != ":memory:" else None
    if path is None or not path.parent.is_dir():
        yield
        return
    import fcntl

    with open(path.with_name(f".{path.name}.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def finished_trials(study: Any) -> int:
    """The trials that count toward ``--trials``: completed, pruned or failed, in any process."""
    return sum(t.state.name in FINISHED_STATES for t in study.get_trials(deepcopy=False))


def _log_trial(main_indicator: str) -> Any:
    """A study callback that logs one line per finished trial: values, result, duration."""

    def log(study: Any, trial: Any) -> None:
        shown = ", ".join(f"{k}={format_value(v)}" for k, v in trial.params.items())
        seconds = trial.duration.total_seconds() if trial.duration else 0.0
        state = trial.state.name
        if state == "COMPLETE":
            best = study.best_trial
            result = f"{main_indicator}={trial.value:.4g} (best {best.value:.4g}, trial {best.number})"
        elif state == "PRUNED":
            last = trial.intermediate_values.get(trial.user_attrs.get("pruned_at"))
            result = f"pruned at step {trial.user_attrs.get('pruned_at')}" + (
                f" ({main_indicator}={last:.4g})" if last is not None else "")
        else:
            result = f"failed: {trial.user_attrs.get('error', 'see the log above')}"
        logger.info("trial %d %s  %s  %s  %.1f s", trial.number, state, shown, result, seconds)

    return log


def tune(recipe: str | Path, overrides: Sequence[str] = (), *, space: Sequence[str | SearchParam], trials: int,
         storage: str | None = None, study_name: str | None = None, pruner: str | Any = "median",
         sampler: str | Any = "tpe", out: str | Path | None = None, seed: int | None = None,
         timeout: float | None = None) -> TuneResult:
    """Search the hyperparameters of a recipe with Optuna; write ``best.yaml``, the trial tables and the plots.

    Re-running the same call resumes the study: the trials it already finished count toward ``trials``.
    Several processes with one ``storage`` run trials in parallel until the study holds ``trials`` of them (each
    process stops at the first trial it finishes past that count, so a study may end one trial over per process).

    Args:
        recipe: a recipe path or packaged name, as ``tools/train.py -c`` takes.
        overrides: ``key=value`` overrides applied to every trial.
        space: ``KEY=LOW:HIGH[:log]`` ranges and ``KEY=A,B,C`` choices (or parsed :class:`SearchParam`).
        trials: the number of finished trials the study should hold.
        storage: an Optuna database URL; default ``sqlite:///<out>/study.db``.
        study_name: the study's name in its storage; default the recipe's file name.
        pruner: ``median``, ``hyperband``, ``none`` or an Optuna pruner.
        sampler: ``tpe``, ``random`` or an Optuna sampler.
        out: the output directory; default ``<the recipe's output_dir>_tune``.
        seed: the sampler's seed (a resumed study draws on from ``seed`` plus the trials it holds).
        timeout: stop starting trials after this many minutes.

    Raises:
        ConfigError: a bad space, key, value, pruner, sampler or storage (before any trial), or a trial whose
            config is refused (the study stops).
        MissingDependencyError: optuna is not installed.
    """
    optuna = import_optuna()
    from oarkit.core.config import instantiate, load_config, resolve_config_path
    from oarkit.core.tune.report import write_reports

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ConfigError("oarkit tune runs one process per trial, not under torchrun: to run trials in parallel, "
                          "start several `oarkit tune` processes with one --storage")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"--trials must be a positive number of trials, got {trials!r}")
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"--timeout is in minutes and must be positive, got {timeout!r}")
    params = parse_space(space)
    cfg = load_config(recipe, list(overrides))
    check_space(params, cfg, recipe, overrides)
    from oarkit.core.data.doctor import check_before_training

    check_before_training(instantiate(cfg.data))  # once, before any trial: every trial trains on the same files
    metric = instantiate(cfg.task).build_metric()
    direction = "maximize" if metric.higher_is_better else "minimize"
    out = Path(out) if out is not None else Path(f"{cfg.output_dir}_tune")
    out.mkdir(parents=True, exist_ok=True)
    url = storage or f"sqlite:///{(out / 'study.db').resolve()}"
    name = study_name or resolve_config_path(recipe).stem
    texts = [p.text or p.describe() for p in params]
    with creation_lock(url):
        study = optuna.create_study(storage=open_storage(url), study_name=name, direction=direction,
                                    pruner=make_pruner(pruner), load_if_exists=True)
        started = dict(study.user_attrs)
        if "space" not in started:
            for key, value in (("recipe", str(recipe)), ("overrides", list(overrides)), ("space", texts),
                               ("main_indicator", metric.main_indicator)):
                study.set_user_attr(key, value)
    if study.direction.name.lower() != direction:
        raise ConfigError(f"study {name!r} in {url} was created to {study.direction.name.lower()}, but "
                          f"{metric.main_indicator} is to {direction}; pick another --study-name")
    done = finished_trials(study)
    study.sampler = make_sampler(sampler, None if seed is None else seed + len(study.get_trials(deepcopy=False)))
    if "space" in started and started["space"] != texts:
        logger.warning("study %r was started with --space %s; this run searches %s", name,
                       " ".join(started["space"]), " ".join(texts))
    logger.info("study %r (%s, %s %s): %d of %d trials done; space: %s", name, url, direction,
                metric.main_indicator, done, trials, "; ".join(p.describe() for p in params))
    report_args = dict(out=out, recipe=recipe, overrides=overrides, main_indicator=metric.main_indicator)
    if done < trials:
        objective = TrialObjective(recipe, overrides, params, out)
        callbacks = [optuna.study.MaxTrialsCallback(trials, states=tuple(getattr(optuna.trial.TrialState, s)
                                                                           for s in FINISHED_STATES)),
                     _log_trial(metric.main_indicator)]
        try:
            study.optimize(objective, n_trials=trials - done, timeout=None if timeout is None else 60 * timeout,
                           callbacks=callbacks, gc_after_trial=True)
        except BaseException:
            try:  # what finished is reported even when the study stops on an error
                write_reports(study, **report_args)
            except Exception as err:  # never mask the error that stopped the study
                logger.warning("could not write the reports of study %r: %s", name, err)
            raise
    else:
        logger.info("study %r already holds %d finished trials; raise --trials to run more", name, done)
    files = write_reports(study, **report_args)
    states: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        states[t.state.name] = states.get(t.state.name, 0) + 1
    result = TuneResult(study_name=name, storage=url, out=out, main_indicator=metric.main_indicator,
                        direction=direction, states=states, files=files)
    if states.get("COMPLETE"):
        best = study.best_trial
        result.best_number, result.best_value, result.best_params = best.number, best.value, dict(best.params)
    return result
