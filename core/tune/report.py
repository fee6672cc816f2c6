"""What a study leaves in its output directory: ``best.yaml``, ``trials.csv``, ``trials.md`` and Optuna's plots.

Every file is written through a temporary file of its own and a rename, so that several processes finishing one
shared study at the same moment never leave a half-written report.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oarkit.core.tune.space import format_value, space_overrides

logger = logging.getLogger(__name__)

BEST_FILE = "best.yaml"
CSV_FILE = "trials.csv"
MARKDOWN_FILE = "trials.md"
HISTORY_PLOT = "optimization_history.png"
IMPORTANCE_PLOT = "param_importances.png"


def _replace_atomically(path: Path, write: Any) -> Path:
    """Call ``write(tmp_path)``, then rename the temporary file onto ``path`` (one temporary name per process)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _write_text(path: Path, text: str) -> Path:
    return _replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _row(trial: Any, main_indicator: str) -> dict[str, Any]:
    """One trial as the tables show it: number, state, values, metric, duration, notes."""
    state = trial.state.name
    note = ""
    if state == "PRUNED":
        step = trial.user_attrs.get("pruned_at")
        note = f"pruned at step {step}" if step is not None else "pruned"
    elif state == "FAIL":
        note = str(trial.user_attrs.get("error", "failed"))
    return {
        "number": trial.number,
        "state": state,
        "params": dict(trial.params),
        main_indicator: trial.value if state == "COMPLETE" else None,
        "last_reported": (trial.intermediate_values[max(trial.intermediate_values)]
                          if trial.intermediate_values else None),
        "duration_s": round(trial.duration.total_seconds(), 2) if trial.duration else None,
        "epochs_run": trial.user_attrs.get("epochs_run"),
        "run_dir": trial.user_attrs.get("run_dir", ""),
        "worker": trial.user_attrs.get("worker", ""),
        "note": note,
    }


def write_csv(rows: Sequence[dict[str, Any]], path: Path, main_indicator: str) -> Path:
    """``trials.csv``: one row per trial, one column per searched key."""
    keys = list(dict.fromkeys(k for r in rows for k in r["params"]))
    columns = ["number", "state", *keys, main_indicator, "last_reported", "duration_s", "epochs_run", "run_dir",
               "worker", "note"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    for r in rows:
        writer.writerow({**{k: v for k, v in r.items() if k != "params"}, **r["params"]})
    return _write_text(path, buffer.getvalue())


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_markdown(rows: Sequence[dict[str, Any]], path: Path, *, title: str, lines: Sequence[str],
                   main_indicator: str) -> Path:
    """``trials.md``: a Markdown table of number, state, values, metric and duration."""
    out = [f"# {title}", "", *(f"- {line}" for line in lines), "",
           f"| trial | state | values | {main_indicator} | duration |", "|---:|---|---|---:|---:|"]
    for r in rows:
        values = ", ".join(f"{k}={format_value(v)}" for k, v in r["params"].items())
        if r[main_indicator] is not None:
            metric = f"{r[main_indicator]:.4f}"
        elif r["last_reported"] is not None:
            metric = f"({r['last_reported']:.4f}, {r['note']})"
        else:
            metric = r["note"][:80] or "-"
        duration = f"{r['duration_s']:.1f} s" if r["duration_s"] is not None else "-"
        out.append(f"| {r['number']} | {r['state']} | {_cell(values)} | {_cell(metric)} | {duration} |")
    return _write_text(path, "\n".join(out) + "\n")


def write_best_config(trial: Any, path: Path, *, recipe: str | Path, overrides: Sequence[str],
                      main_indicator: str, study_name: str) -> Path:
    """``best.yaml``: the recipe's resolved config with the best trial's values (``tools/train.py -c`` trains it)."""
    from omegaconf import OmegaConf

    from oarkit.core.config import load_config

    cfg = load_config(recipe, [*overrides, *space_overrides(dict(trial.params))])
    header = [f"# oarkit tune, study {study_name!r}: trial {trial.number} is best with {main_indicator}="
              f"{trial.value:.6g}", f"# recipe {recipe}; overrides: {' '.join(overrides) or '-'}",
              f"# values: {' '.join(space_overrides(dict(trial.params)))}",
              f"# train it with: python tools/train.py -c {path}"]
    return _write_text(path, "\n".join(header) + "\n" + OmegaConf.to_yaml(cfg, resolve=True))


def _save_axes(axes: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure = axes.figure
    figure.set_size_inches(8, 5)
    figure.tight_layout()
    try:
        return _replace_atomically(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110))
    finally:
        plt.close(figure)


def write_plots(study: Any, out: Path, main_indicator: str = "Objective Value") -> dict[str, Path]:
    """Optuna's optimization history and parameter importances as PNG, where the study has enough for them."""
    import optuna
    from optuna.visualization import matplotlib as plots

    complete = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    files: dict[str, Path] = {}
    if not complete:
        logger.info("no completed trial yet: %s and %s are not drawn", HISTORY_PLOT, IMPORTANCE_PLOT)
        return files
    common = set.intersection(*(set(t.params) for t in complete))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        files["optimization_history"] = _save_axes(plots.plot_optimization_history(study, target_name=main_indicator),
                                                   out / HISTORY_PLOT)
        if len(complete) < 2 or len(common) < 2:
            logger.info("%s not drawn: parameter importances need at least two completed trials (the study has "
                        "%d) and more than one parameter (it searches %d)", IMPORTANCE_PLOT, len(complete),
                        len(common))
        else:
            try:  # (PED-ANOVA warns when every trial scored alike: the bars are then equal, which is the answer)
                warnings.filterwarnings("ignore", "Target and region quantiles", UserWarning)
                axes = plots.plot_param_importances(study, target_name=main_indicator)
            except (ValueError, RuntimeError, ZeroDivisionError) as err:  # e.g. every trial scored the same
                logger.info("%s not drawn: %s", IMPORTANCE_PLOT, err)
            else:
                files["param_importances"] = _save_axes(axes, out / IMPORTANCE_PLOT)
    return files


def write_reports(study: Any, *, out: Path, recipe: str | Path, overrides: Sequence[str],
                  main_indicator: str) -> dict[str, Path]:
    """Write ``best.yaml`` (once a trial completed), ``trials.csv``, ``trials.md`` and the plots into ``out``.

    Returns:
        The files written, by name (``best``, ``csv``, ``markdown``, ``optimization_history``,
        ``param_importances``).
    """
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    rows = [_row(t, main_indicator) for t in trials]
    states = {s: sum(r["state"] == s for r in rows) for s in dict.fromkeys(r["state"] for r in rows)}
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    files: dict[str, Path] = {}
    lines = [f"recipe `{recipe}`" + (f", overrides `{' '.join(overrides)}`" if overrides else ""),
             f"{study.direction.name.lower()} {main_indicator}; {len(rows)} trials: "
             + (", ".join(f"{n} {s.lower()}" for s, n in states.items()) or "none")]
    if complete:
        best = study.best_trial
        lines.append(f"best: trial {best.number}, {main_indicator}={best.value:.4f}, "
                     + ", ".join(f"{k}={format_value(v)}" for k, v in best.params.items()))
        files["best"] = write_best_config(best, out / BEST_FILE, recipe=recipe, overrides=overrides,
                                          main_indicator=main_indicator, study_name=study.study_name)
    files["csv"] = write_csv(rows, out / CSV_FILE, main_indicator)
    files["markdown"] = write_markdown(rows, out / MARKDOWN_FILE, title=f"oarkit tune: {study.study_name}",
                                       lines=lines, main_indicator=main_indicator)
    files.update(write_plots(study, out, main_indicator))
    return files
