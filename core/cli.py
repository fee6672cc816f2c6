"""The ``oarkit`` command line (and tools/*.py): train, eval, predict, export, models, summary, prepare-data,
prune-sensitivity.

Every verb is kit-agnostic: it reads the task id of what it is given (a run's meta.json, an export's deploy.yaml,
a registry name's model card) and asks that id's :class:`~oarkit.core.kits.TaskEntry` for the predictor, its
options, the export source, datasets, the card metric and the pictures. A kit adds verbs of its own
(``train-tokenizer``) through :func:`~oarkit.core.kits.register_command`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oarkit.core.errors import OarkitError

logger = logging.getLogger("oarkit")

#: what every run directory may hold beside its checkpoints, whatever its task (``predictions``: the Makefile's
#: ``predict --save-dir``)
RUN_FILES = ("curves.png", "metrics.csv", "predictions")


def setup_environment() -> None:
    """What every entry point sets first: offline hub, no update checks, a private inductor cache, quiet logs."""
    # Set before torch / albumentations / huggingface_hub are imported; a user's own value wins.
    os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # HF_HUB_OFFLINE=0 lets pretrained=True download from the hub
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path.home() / ".cache" / "oarkit" / "inductor"))
    for noisy in ("matplotlib", "PIL", "urllib3", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # (torchao's enum notice, printed when transformers imports it, is filtered in oarkit.core's __init__)


# ----------------------------------------------------------------------------- train
def cmd_train(args: argparse.Namespace) -> int:
    from omegaconf import OmegaConf

    from oarkit.core.config import build_trainer, load_config

    overrides = list(args.overrides)
    if args.output_dir:
        overrides.append(f"output_dir={args.output_dir}")
    config = args.config
    if config is None:
        if not isinstance(args.resume, str):
            raise OarkitError("train needs -c CONFIG (or --resume RUN_DIR/last to continue a run from its config)")
        config = str(Path(args.resume) / "config.yaml")
    cfg = load_config(config, overrides)
    if args.show_config:
        print(OmegaConf.to_yaml(cfg))
        return 0
    from oarkit.core import distributed
    from oarkit.core.data.doctor import check_before_training

    trainer = build_trainer(cfg, resume=args.resume or False)
    check_before_training(trainer.data)  # data.doctor=false skips it; a data module without inventory() too
    try:
        summary = trainer.fit()
    finally:
        distributed.cleanup()
    if trainer.is_main:
        _print_block("training finished", summary)
    return 0


# ----------------------------------------------------------------------------- check-data
def cmd_check_data(args: argparse.Namespace) -> int:
    from oarkit.core.config import instantiate, load_config
    from oarkit.core.data.doctor import check_data_module

    cfg = load_config(args.config, list(args.overrides))
    data = instantiate(cfg.data)  # the data module the recipe trains on, as `oarkit train` builds it
    report = check_data_module(data, splits=args.splits, hash_limit=args.hash_limit,
                               imbalance_ratio=args.imbalance_ratio)
    if report is None:
        raise OarkitError(f"{type(data).__name__} has no inventory(split) method, so the dataset doctor cannot "
                          "examine its data")
    print(json.dumps(report.to_dict(), indent=2, default=str) if args.json else report.table())
    return 1 if report.errors else 0


# ----------------------------------------------------------------------------- tune
def cmd_tune(args: argparse.Namespace) -> int:
    from oarkit.core.tune import import_optuna, tune

    import_optuna().logging.set_verbosity(logging.WARNING)  # one line per trial comes from oarkit.core.tune
    result = tune(args.config, args.overrides, space=args.space, trials=args.trials, storage=args.storage,
                  study_name=args.study_name, pruner=args.pruner, sampler=args.sampler, out=args.out,
                  seed=args.seed, timeout=args.timeout)
    values: dict[str, Any] = {"study": result.study_name, "storage": result.storage,
                              "trials": ", ".join(f"{n} {s.lower()}" for s, n in result.states.items())}
    if result.best_number is not None:
        values.update({"best trial": result.best_number, f"best {result.main_indicator}": result.best_value,
                       **{f"  {k}": v for k, v in result.best_params.items()}})
    values.update({name: str(path) for name, path in result.files.items()})
    _print_block("tuning finished", values)
    return 0


# ----------------------------------------------------------------------------- eval
def cmd_eval(args: argparse.Namespace) -> int:
    from oarkit.core.engine.evaluation import evaluate_run
    from oarkit.core.kits import source_entry

    if not Path(args.source).is_dir():
        raise OarkitError(f"eval needs a run or model directory; {args.source!r} is none")
    source_entry(args.source)  # a task id that no installed kit registers fails here, before any work
    results = evaluate_run(args.source, data_root=args.data, split=args.split, batch_size=args.batch_size,
                           device=args.device)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        _print_block(f"evaluation of {args.source}", {k: v for k, v in results.items() if not isinstance(v, list)})
    return 0


# ----------------------------------------------------------------------------- prune-sensitivity
def _parse_ratios(text: str) -> list[float]:
    """``0.1,0.3,0.5`` as floats, each in (0, 1)."""
    from oarkit.core.errors import ConfigError
    from oarkit.core.prune.sensitivity import check_ratios

    try:
        ratios = [float(item) for item in text.split(",") if item.strip()]
    except ValueError as err:
        raise ConfigError(f"--ratios {text!r} must be comma-separated numbers in (0, 1), e.g. 0.1,0.3,0.5") from err
    return check_ratios(ratios)


def cmd_prune_sensitivity(args: argparse.Namespace) -> int:
    from oarkit.core.engine.checkpoint import find_model_dir
    from oarkit.core.kits import source_entry
    from oarkit.core.prune.sensitivity import analyse_sensitivity, write_sensitivity

    if not Path(args.source).is_dir():
        raise OarkitError(f"prune-sensitivity needs a trained run or model directory; {args.source!r} is none "
                          "(train one with `oarkit train -c RECIPE`)")
    ratios = _parse_ratios(args.ratios)
    folder = find_model_dir(Path(args.source))
    source_entry(args.source)  # a task id that no installed kit registers fails here, before any work
    report = analyse_sensitivity(folder, data_root=args.data, split=args.split, method=args.method, ratios=ratios,
                                 layers=args.layers, batch_size=args.batch_size, device=args.device)
    run_dir = folder.parent if folder.name in ("best", "last") else folder
    paths = write_sensitivity(report, args.out or run_dir / "prune_sensitivity")
    width = max([5, *(len(layer.name) for layer in report.layers)])
    print(f"\n== sensitivity of {report.metric} ({report.method}, no fine-tuning): baseline {report.baseline:.4f}, "
          f"{len(report.layers)} of {report.groups} groups ==")
    print(f"  {'layer':<{width}} {'FLOPs':>6} " + " ".join(f"{f'@{r:g}':>8}" for r in ratios))
    for layer in report.layers:
        print(f"  {layer.name:<{width}} {100 * layer.flops_share:5.1f}% " + " ".join(f"{v:8.4f}" for v in layer.metric))
    for kind, path in paths.items():
        print(f"  {kind:<{width}} {path}")
    print(f"layer-wise pruning from it: oarkit train -c RECIPE prune={report.method} prune.checkpoint={args.source} "
          f"prune.sensitivity={paths['json']} prune.flops=0.5")
    return 0


# ----------------------------------------------------------------------------- predict
def _expand_inputs(inputs: Sequence[str], suffixes: Sequence[str]) -> list[str]:
    """The inputs, with each folder replaced by its files of the task's ``suffixes`` (none: kept as given)."""
    out: list[str] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir() and suffixes:
            out += sorted(str(p) for p in path.rglob("*") if p.suffix.lower() in suffixes)
        else:
            out.append(item)
    if not out:
        raise OarkitError(f"no inputs found in {list(inputs)}")
    return out


#: the predict options of the command line that a task entry may declare (``TaskEntry.predict_options``)
PREDICT_OPTIONS = ("topk",)


def cmd_predict(args: argparse.Namespace) -> int:
    from oarkit.core.kits import source_entry

    entry = source_entry(args.source)
    given = {name: getattr(args, name) for name in PREDICT_OPTIONS if getattr(args, name) is not None}
    refused = sorted(set(given) - set(entry.predict_options))
    if refused:
        raise OarkitError(f"--{refused[0]} does not apply to {entry.task_id!r} models; leave it out")
    predictor = entry.predictor(args.source, device=args.device, **given)
    inputs = _expand_inputs(args.inputs, entry.input_suffixes)
    results = predictor(inputs)
    save_dir = Path(args.save_dir) if args.save_dir else None
    for i, result in enumerate(results):
        record = result.to_dict()
        if save_dir is not None:
            name = Path(record.get("source") or f"input_{i}").stem
            record["plot"] = str(result.save(save_dir / f"{i:03d}_{name}.png"))
        print(json.dumps(record, default=str))
    return 0


# ----------------------------------------------------------------------------- export
def _parse_options(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``FORMAT.KEY=VALUE`` pairs as ``{format: {key: value}}`` (values read as YAML: 18, true, 0.5)."""
    import yaml

    options: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        fmt, dot, name = key.partition(".")
        if not sep or not dot or not fmt or not name:
            raise OarkitError(f"--option {item!r} must read FORMAT.KEY=VALUE, e.g. onnx.opset=18")
        options.setdefault(fmt, {})[name] = yaml.safe_load(value)
    return options


#: ``--format web``: not a registered artifact format but a folder around one, written by the task's web_export
WEB_FORMAT = "web"
WEB_DESCRIPTION = ("a static folder that runs the model in the browser on onnxruntime-web (index.html, oarkit.js, "
                   "the ONNX model, deploy.json)")


def default_web_out(source: str) -> Path:
    """Where ``--format web`` writes without ``--out``: ``<run>/export/web`` for a run (or its best/, last/),
    ``<folder>/web`` for another folder (a model, export or pipeline folder), ``./<name>_web`` for a registry or
    pipeline name (``clas/pp_lcnet_x1_0`` -> ``./clas_pp_lcnet_x1_0_web``)."""
    path = Path(source)
    if path.is_dir():
        if path.name in ("best", "last") and (path / "meta.json").exists():
            return path.parent / "export" / WEB_FORMAT
        if (path / "best").is_dir() or (path / "last").is_dir():
            return path / "export" / WEB_FORMAT
        return path / WEB_FORMAT
    return Path(f"{str(source).strip('/').replace('/', '_')}_{WEB_FORMAT}")


def cmd_export_web(args: argparse.Namespace) -> int:
    """``oarkit export SOURCE --format web``: the task's web_export writes the folder."""
    from oarkit.core.kits import source_entry, task_entries

    entry = source_entry(args.source)
    if entry.web_export is None:
        able = sorted(e.task_id for e in task_entries().values() if e.web_export is not None)
        raise OarkitError(f"{entry.task_id!r} models cannot be exported to the web yet; --format web supports the "
                          f"tasks {', '.join(able) or 'of no installed kit'} (export to onnx instead: --format onnx)")
    refused = [flag for flag, given in (("--option", args.option), ("--data", args.data)) if given]
    if refused:
        raise OarkitError(f"{', '.join(refused)} do not apply to --format web (it always verifies its ONNX model "
                          "against eager PyTorch); leave them out")
    out = Path(args.output_dir) if args.output_dir else default_web_out(args.source)
    kwargs: dict[str, Any] = {"pretrained": False} if args.random_weights else {}
    folder = entry.web_export(args.source, out=out, quantize=args.quantize, **kwargs)
    print(f"\n== web export of {args.source} ==\nwrote {folder}: serve it with any static file server, e.g.\n"
          f"  python -m http.server -d {folder} 8080   # then open http://127.0.0.1:8080/")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from oarkit.core.export import export, get_format, list_formats
    from oarkit.core.kits import source_entry

    if args.list_formats:
        for name in list_formats():
            fmt = get_format(name)
            print(f"{name:<16} {fmt.description}  options: {fmt.options or '-'}")
        print(f"{WEB_FORMAT:<16} {WEB_DESCRIPTION}  options: -")
        return 0
    if not args.source:
        raise OarkitError("export needs a run directory or a registry name (or --list-formats)")
    requested = [f.strip() for f in str(args.format).split(",") if f.strip()]
    if WEB_FORMAT in requested:
        if requested != [WEB_FORMAT]:
            raise OarkitError(f"--format web writes a folder of its own and cannot be combined with "
                              f"{', '.join(f for f in requested if f != WEB_FORMAT)}; run two exports")
        return cmd_export_web(args)
    entry = source_entry(args.source)
    if entry.export_source is None:
        raise OarkitError(f"{entry.task_id!r} models cannot be exported yet")
    source = entry.export_source(args.source, pretrained=not args.random_weights)
    report = export(source, args.format, quantize=args.quantize, output_dir=args.output_dir, verify=args.verify,
                    data_root=args.data, options=_parse_options(args.option),
                    calibration_images=args.calibration_images, batch_size=args.batch_size)
    print(f"\n== export of {args.source} ==")
    print(report.table())
    print(f"\nartifacts, deploy.yaml files and report.md/report.json in {args.output_dir or source.output_dir}")
    return 0 if report.ok else 1


# ----------------------------------------------------------------------------- zoo-check
def cmd_zoo_check(args: argparse.Namespace) -> int:
    from oarkit.core.export import parse_formats
    from oarkit.core.export.zoo import check_models, resolve_names, write_zoo_table

    names = resolve_names(args.patterns, sample=args.sample)
    if not names:
        raise OarkitError(f"no model matches {args.patterns}; try 'clas/*'")
    formats = [] if args.no_export else parse_formats(args.formats)
    rows = check_models(names, formats=formats)
    if args.write:
        flags = (["--sample"] if args.sample else []) + ([f"--formats {args.formats}"] if args.formats != "onnx"
                                                         else []) + (["--no-export"] if args.no_export else [])
        command = "oarkit zoo-check " + " ".join([*(repr(p) for p in args.patterns), *flags])
        print(f"wrote {write_zoo_table(rows, args.write, command=command)}")
    failed = [r.name for r in rows if not r.ok]
    tail = f"; failing: {', '.join(failed)}" if failed else ""
    print(f"{len(rows) - len(failed)} of {len(rows)} models pass{tail}")
    return 1 if failed else 0


# ----------------------------------------------------------------------------- prepare-data
def cmd_prepare_data(args: argparse.Namespace) -> int:
    from oarkit.core.errors import did_you_mean
    from oarkit.core.kits import task_entries

    preparers = {name: prepare for entry in task_entries().values() for name, prepare in entry.datasets.items()}
    if args.name not in preparers:
        raise OarkitError(f"unknown dataset {args.name!r}.{did_you_mean(args.name, preparers)} "
                          f"Available: {', '.join(sorted(preparers))}")
    tic = time.perf_counter()
    root = preparers[args.name](args.out)
    print(f"{args.name} ready at {root} ({time.perf_counter() - tic:.1f}s)")
    return 0


# ----------------------------------------------------------------------------- models
def cmd_models(args: argparse.Namespace) -> int:
    from oarkit.core.kits import task_entries
    from oarkit.core.registry import list_models, model_info

    if args.info:
        print(json.dumps(model_info(args.info).to_dict(), indent=2, default=str))
        return 0
    names = list_models(args.pattern, pretrained=args.pretrained)
    if not names:
        raise OarkitError(f"no model matches {args.pattern!r}; try 'clas/*' or 'timm/resnet*'")
    entries = task_entries()
    for name in names:
        card = model_info(name)
        entry = entries.get(card.task)
        metric = entry.reference_metric(card.metrics) if entry else None
        shown = f"{metric[1]:6.2f} {metric[0]:<16}" if metric else " " * 23
        licence = card.weights.license if card.weights else "-"
        print(f"{name:<40} {card.task:<26} {card.family:<22} {shown}  {licence}")
    print(f"{len(names)} models")
    return 0


# ----------------------------------------------------------------------------- summary
def cmd_summary(args: argparse.Namespace) -> int:
    from oarkit.core.engine.checkpoint import read_meta
    from oarkit.core.kits import source_entry

    run = Path(args.run_dir)
    if not run.is_dir():
        raise OarkitError(f"summary needs a run directory; {run} is none")
    entry = source_entry(run)
    meta = read_meta(run / "best") if (run / "best").exists() else read_meta(run / "last")
    indicator = meta.get("main_indicator", "")
    values: dict[str, Any] = {
        "task": entry.task_id,
        f"best {indicator}": meta.get("metrics", {}).get(indicator),
        "best epoch": meta.get("epoch"),
        "model": (meta.get("model") or {}).get("name"),
        "labels": len(meta.get("labels") or []) or None,
    }
    if entry.summary is not None:
        values.update(entry.summary(meta))
    values.update({"run directory": str(run), "best weights": str(run / "best")})
    values = {k: v for k, v in values.items() if v is not None}
    for name in (*RUN_FILES, *entry.pictures):
        if (run / name).exists():
            values[name] = str(run / name)
    if args.started is not None:
        values["wall time"] = f"{time.time() - args.started:.0f} s"
    _print_block("summary", values)
    return 0


def _print_block(title: str, values: dict[str, Any]) -> None:
    print(f"\n== {title} ==")
    width = max([18, *(len(k) + 1 for k in values)])
    for k, v in values.items():
        print(f"  {k:<{width}} {v:.4f}" if isinstance(v, float) else f"  {k:<{width}} {v}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oarkit", description="oarkit: PaddlePaddle's kits on PyTorch")
    verbs = parser.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("train", help="train from a config file plus key=value overrides")
    p.add_argument("-c", "--config", help="a YAML recipe path or a packaged name (clas/pp_lcnet_x0_5_digits_32x32)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. trainer.max_epochs=3 data.root=PATH")
    p.add_argument("-o", "--output-dir", help="the run directory (same as output_dir=...)")
    p.add_argument("--resume", nargs="?", const=True, default=None,
                   help="continue from <output_dir>/last, or from the given last/ directory")
    p.add_argument("--show-config", action="store_true", help="print the composed config and exit")
    p.set_defaults(func=cmd_train)

    p = verbs.add_parser("check-data", help="check a recipe's dataset before training: counts, sizes, corrupt "
                                            "files, label problems, imbalance, train/val duplicates")
    p.add_argument("-c", "--config", required=True, help="a YAML recipe path or a packaged name")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. data.root=PATH")
    p.add_argument("--splits", nargs="+", default=["train", "val"], help="splits to check (default: train val)")
    p.add_argument("--hash-limit", type=int, default=20000,
                   help="skip the train/val duplicate-image search above this many images (default: 20000)")
    p.add_argument("--imbalance-ratio", type=float, default=10.0,
                   help="warn when the largest training class outnumbers the smallest this many times (default: 10)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_check_data)

    p = verbs.add_parser("tune", help="search hyperparameters of a recipe with Optuna (each trial a training run)")
    p.add_argument("-c", "--config", required=True, help="a YAML recipe path or a packaged name")
    p.add_argument("overrides", nargs="*", help="key=value overrides applied to every trial")
    p.add_argument("--trials", type=int, required=True, help="finished trials the study should hold (a re-run "
                                                             "resumes and counts the earlier ones)")
    p.add_argument("--space", action="append", required=True, metavar="KEY=LOW:HIGH[:log] | KEY=A,B,C",
                   help="a searched key: an int or float range (':log' log-uniform) or a choice (repeatable)")
    p.add_argument("--storage", help="an Optuna database URL (default: sqlite:///<out>/study.db; PostgreSQL for "
                                     "several machines)")
    p.add_argument("--study-name", help="the study's name in its storage (default: the recipe's file name)")
    p.add_argument("--pruner", choices=["median", "hyperband", "none"], default="median")
    p.add_argument("--sampler", choices=["tpe", "random"], default="tpe")
    p.add_argument("--out", help="trial runs and reports (default: <the recipe's output_dir>_tune)")
    p.add_argument("--seed", type=int, help="the sampler's seed")
    p.add_argument("--timeout", type=float, metavar="MIN", help="start no trial after this many minutes")
    p.set_defaults(func=cmd_tune)

    p = verbs.add_parser("eval", help="evaluate a run directory on a dataset split")
    p.add_argument("source", help="a run directory, or its best/ or last/")
    p.add_argument("--data", help="the dataset root (default: the one the run was trained on)")
    p.add_argument("--split", default="val", help="the split to evaluate (default: val)")
    p.add_argument("--batch-size", type=int, help="samples per batch (default: the run's evaluation batch size)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true", help="print every metric as JSON")
    p.set_defaults(func=cmd_eval)

    p = verbs.add_parser("prune-sensitivity", help="prune each channel group of a trained run alone at a few "
                                                   "ratios and score it without fine-tuning (PaddleSlim's "
                                                   "sensitivity); writes a table for prune.sensitivity=")
    p.add_argument("source", help="a run directory, or its best/ or last/")
    p.add_argument("--data", help="the dataset root (default: the one the run was trained on)")
    p.add_argument("--split", default="val", help="the split scored (default: val)")
    p.add_argument("--method", default="l1", help="channel importance: l1 or fpgm (default: l1)")
    p.add_argument("--ratios", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7",
                   help="comma-separated shares of a group's channels to remove, each in (0, 1) "
                        "(default: 0.1,...,0.7)")
    p.add_argument("--layers", type=int, help="analyse at most this many groups, those with the most FLOPs first "
                                              "(default: all)")
    p.add_argument("--batch-size", type=int, help="samples per batch (default: the run's evaluation batch size)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", help="where sensitivity.json/.csv/.png go (default: <run>/prune_sensitivity)")
    p.set_defaults(func=cmd_prune_sensitivity)

    p = verbs.add_parser("predict", help="predict inputs (image files or folders, texts) with a run directory, "
                                         "export folder or model name")
    p.add_argument("source", help="a run directory, a model directory, an export folder or a registry name")
    p.add_argument("inputs", nargs="+", help="image files or folders (image tasks), texts (text tasks)")
    p.add_argument("--topk", type=int, help="classes per input, for tasks that rank classes (default: the "
                                            "predictor's)")
    p.add_argument("--save-dir", help="write a picture of each prediction here")
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_predict)

    p = verbs.add_parser("export", help="export a run directory or registry model (onnx, pt2, openvino, executorch, "
                                        "int8, web), verify every artifact, print a table")
    p.add_argument("source", nargs="?", help="a run directory, its best/ or last/, or a registry name")
    p.add_argument("--format", default="onnx",
                   help="comma-separated formats, or 'all' (see --list-formats), or 'web' (a static web folder); "
                        "default: onnx")
    p.add_argument("--quantize", choices=["int8"], help="also write the int8 variant of each format")
    p.add_argument("--verify", action="store_true",
                   help="run each artifact against eager PyTorch (errors, latency; the metric with data)")
    p.add_argument("--data", help="dataset root for int8 calibration and the metric (default: the run's own)")
    p.add_argument("--output-dir", "--out", dest="output_dir",
                   help="where the format folders go (default: <run>/export); with --format web, the web folder "
                        "(default: <run>/export/web, or ./<name>_web for a registry name)")
    p.add_argument("--option", action="append", default=[], metavar="FORMAT.KEY=VALUE",
                   help="a format option, e.g. onnx.opset=18 or executorch.max_batch=8 (repeatable)")
    p.add_argument("--calibration-images", type=int, default=256, help="training images int8 calibration reads")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--random-weights", action="store_true",
                   help="for a registry name: export with random weights instead of the registered ones")
    p.add_argument("--list-formats", action="store_true", help="list the export formats and their options")
    p.set_defaults(func=cmd_export)

    p = verbs.add_parser("zoo-check", help="run registered models through build, forward, backward, ONNX export "
                                           "and parity; write the support table")
    p.add_argument("patterns", nargs="*", default=["clas/*"], help="fnmatch patterns (default: 'clas/*')")
    p.add_argument("--sample", action="store_true", help="one model of every family")
    p.add_argument("--formats", default="onnx", help="export formats to export and verify: onnx,pt2,openvino,"
                                                     "executorch or all (default: onnx)")
    p.add_argument("--no-export", action="store_true", help="build, forward and backward only")
    p.add_argument("--write", metavar="PATH", help="write the Markdown table here, e.g. docs/model_zoo.md")
    p.set_defaults(func=cmd_zoo_check)

    p = verbs.add_parser("models", help="list registered models (fnmatch pattern) or show one model's card")
    p.add_argument("pattern", nargs="?", default="*", help="e.g. 'clas/pp_*' or 'timm/convnext*'")
    p.add_argument("--pretrained", action="store_true", help="only models with registered weights")
    p.add_argument("--info", metavar="NAME", help="print the model card of NAME")
    p.set_defaults(func=cmd_models)

    p = verbs.add_parser("summary", help="print what a run produced: metric, directories, pictures")
    p.add_argument("run_dir")
    p.add_argument("--started", type=float, help="a UNIX time; the summary then reports the wall time since")
    p.set_defaults(func=cmd_summary)

    p = verbs.add_parser("prepare-data", help="write a dataset that ships offline to disk (e.g. digits)")
    p.add_argument("name", help="dataset name, e.g. digits")
    p.add_argument("--out", required=True, help="target folder")
    p.set_defaults(func=cmd_prepare_data)

    p = verbs.add_parser("convert", help="convert a checkpoint of another framework into an oarkit model directory")
    p.add_argument("framework", choices=["paddle"], help="the framework the checkpoint comes from")
    p.add_argument("src", help="a .pdparams file, a PaddleNLP model directory, or an inference model folder/prefix")
    p.add_argument("--model", required=True, help="the registry model it becomes, e.g. clas/pp_lcnet_x1_0")
    p.add_argument("--out", required=True, help="the model directory to write")
    p.add_argument("--num-classes", type=int, help="another number of classes: keep the backbone, new head")
    p.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword of the registry model's factory (values read as YAML), e.g. reparameterized=true "
                        "for a Paddle inference model whose re-parameterizable layers are folded (repeatable)")
    p.set_defaults(func=cmd_convert)

    p = verbs.add_parser("serve", help="serve models over HTTP: the Open Inference Protocol (KServe v2) and a JSON "
                                       "predict API, batched, with metrics")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="run directories, model directories, export folders, pipeline folders or registry names")
    p.add_argument("--host", default="127.0.0.1", help="the address to bind (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--name", help="the served name of the one MODEL (default: its folder's basename, or the "
                                  "registry name with '/' as '_')")
    p.add_argument("--max-batch-size", type=int, default=16, help="inputs per batch a model runs (default: 16)")
    p.add_argument("--max-delay-ms", type=float, default=5.0,
                   help="how long a batch waits for more requests (default: 5)")
    p.add_argument("--max-queue", type=int, default=256,
                   help="requests waiting per model before 503 + Retry-After (default: 256)")
    p.add_argument("--max-body-mb", type=float, default=20.0, help="the largest request body; more is 413 "
                                                                   "(default: 20)")
    p.add_argument("--workers", type=int, default=1, help="server processes, each with every model (default: 1)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="require 'Authorization: Bearer <$VAR>' on every endpoint but health")
    p.add_argument("--ray", action="store_true",
                   help="run as a Ray Serve deployment: on the cluster $RAY_ADDRESS names, else a local Ray "
                        "(needs oarkit[serve-ray])")
    p.add_argument("--replicas", type=int, default=1,
                   help="Ray Serve replicas with --ray, each with every model and its own batching (default: 1)")
    p.set_defaults(func=cmd_serve)

    from oarkit.core.kits import commands

    for command in commands().values():  # the kits' own verbs
        p = verbs.add_parser(command.name, help=command.help)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


# ----------------------------------------------------------------------------- convert
def _parse_model_args(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as keyword arguments (values read as YAML: true, 0.5, [1, 2])."""
    import yaml

    kwargs: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise OarkitError(f"--model-arg {item!r} must read KEY=VALUE, e.g. reparameterized=true")
        kwargs[key] = yaml.safe_load(value)
    return kwargs


def cmd_convert(args: argparse.Namespace) -> int:
    from oarkit.core.interop import convert_paddle

    out = convert_paddle(args.src, model=args.model, out=args.out, num_classes=args.num_classes,
                         **_parse_model_args(args.model_arg))
    print(f"wrote {out} (model.safetensors, meta.json, config.yaml): predict, eval and export take it as it is")
    return 0


# ----------------------------------------------------------------------------- serve
def cmd_serve(args: argparse.Namespace) -> int:
    from oarkit.core.serve import ServeConfig, serve

    return serve(ServeConfig(sources=tuple(args.models), name=args.name, host=args.host, port=args.port,
                             max_batch_size=args.max_batch_size, max_delay_ms=args.max_delay_ms,
                             max_queue=args.max_queue, max_body_mb=args.max_body_mb, workers=args.workers,
                             api_key_env=args.api_key_env, ray=args.ray, replicas=args.replicas))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``oarkit`` console script and of tools/*.py."""
    setup_environment()
    # Under torchrun only rank zero talks; the other ranks report warnings and errors.
    level = logging.INFO if os.environ.get("RANK", "0") == "0" else logging.WARNING
    logging.basicConfig(level=level, format="%(message)s", stream=sys.stdout)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except OarkitError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
