"""The ``oarkit`` command line (and tools/*.py): train, eval, predict, prepare-data.

Every verb is kit-agnostic: the kit comes from the run directory's meta.json or the registry name, and
the kit module supplies ``Predictor``, ``evaluate`` and ``DATASETS``.
"""

from __future__ import annotations

import argparse
import importlib
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

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def _setup_environment() -> None:
    # Set before torch / albumentations / huggingface_hub are imported; a user's own value wins.
    os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # HF_HUB_OFFLINE=0 lets pretrained=True download from the hub
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path.home() / ".cache" / "oarkit" / "inductor"))
    # Under torchrun only rank zero talks; the other ranks report warnings and errors.
    level = logging.INFO if os.environ.get("RANK", "0") == "0" else logging.WARNING
    logging.basicConfig(level=level, format="%(message)s", stream=sys.stdout)
    for noisy in ("matplotlib", "PIL", "urllib3", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _kit_module(source: str) -> Any:
    """The kit that owns a run directory (its meta.json) or a registry name."""
    from oarkit.core.kits import KITS

    path = Path(source)
    if path.exists():
        for candidate in (path, path / "best", path / "last", path.with_name(f".{path.name}.old")):
            meta = candidate / "meta.json"
            if meta.exists():
                kit = json.loads(meta.read_text()).get("task", "")
                break
        else:
            raise OarkitError(f"{source} is not a run or model directory (no meta.json in it, best/ or last/)")
    else:
        from oarkit.core.errors import UnknownNameError
        from oarkit.core.registry import model_info

        try:
            kit = model_info(source).factory.__module__.split(".")[1]
        except UnknownNameError as err:
            raise OarkitError(f"{source!r} is neither an existing run directory nor a registered model: {err}") from err
    if kit not in KITS:
        raise OarkitError(f"{source} belongs to kit {kit!r}, which is not one of {KITS}")
    return importlib.import_module(f"oarkit.{kit}")


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

    trainer = build_trainer(cfg, resume=args.resume or False)
    try:
        summary = trainer.fit()
    finally:
        distributed.cleanup()
    if trainer.is_main:
        _print_block("training finished", summary)
    return 0


# ----------------------------------------------------------------------------- eval
def cmd_eval(args: argparse.Namespace) -> int:
    kit = _kit_module(args.source)
    results = kit.evaluate(args.source, data_root=args.data, split=args.split, batch_size=args.batch_size,
                           device=args.device)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        _print_block(f"evaluation of {args.source}", {k: v for k, v in results.items() if not isinstance(v, list)})
    return 0


# ----------------------------------------------------------------------------- predict
def _expand_inputs(inputs: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            out += sorted(str(p) for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        else:
            out.append(item)
    if not out:
        raise OarkitError(f"no inputs found in {list(inputs)}")
    return out


def cmd_predict(args: argparse.Namespace) -> int:
    kit = _kit_module(args.source)
    predictor = kit.Predictor(args.source, device=args.device, topk=args.topk)
    inputs = _expand_inputs(args.inputs)
    results = predictor(inputs)
    save_dir = Path(args.save_dir) if args.save_dir else None
    for i, result in enumerate(results):
        record = result.to_dict()
        if save_dir is not None:
            name = Path(record.get("source") or f"input_{i}").stem
            record["plot"] = str(result.save(save_dir / f"{i:03d}_{name}.png"))
        print(json.dumps(record, default=str))
    return 0


# ----------------------------------------------------------------------------- prepare-data
def cmd_prepare_data(args: argparse.Namespace) -> int:
    from oarkit.core.errors import did_you_mean
    from oarkit.core.kits import KITS

    preparers = {}
    for kit in KITS:
        try:
            preparers.update(getattr(importlib.import_module(f"oarkit.{kit}"), "DATASETS", {}))
        except ImportError:
            continue
    if args.name not in preparers:
        raise OarkitError(f"unknown dataset {args.name!r}.{did_you_mean(args.name, preparers)} "
                          f"Available: {', '.join(sorted(preparers))}")
    tic = time.perf_counter()
    root = preparers[args.name](args.out)
    print(f"{args.name} ready at {root} ({time.perf_counter() - tic:.1f}s)")
    return 0


# ----------------------------------------------------------------------------- models
def cmd_models(args: argparse.Namespace) -> int:
    from oarkit.core.registry import list_models, model_info

    if args.info:
        print(json.dumps(model_info(args.info).to_dict(), indent=2, default=str))
        return 0
    names = list_models(args.pattern, pretrained=args.pretrained)
    if not names:
        raise OarkitError(f"no model matches {args.pattern!r}; try 'clas/*' or 'timm/resnet*'")
    for name in names:
        card = model_info(name)
        top1 = card.metrics.get("imagenet_top1")
        licence = card.weights.license if card.weights else "-"
        print(f"{name:<40} {card.family:<22} {f'{top1:.2f}' if top1 else '':>6}  {licence}")
    print(f"{len(names)} models")
    return 0


# ----------------------------------------------------------------------------- summary
def cmd_summary(args: argparse.Namespace) -> int:
    from oarkit.core.engine.checkpoint import read_meta

    run = Path(args.run_dir)
    meta = read_meta(run / "best") if (run / "best").exists() else read_meta(run / "last")
    indicator = meta.get("main_indicator", "")
    values: dict[str, Any] = {
        f"best {indicator}": meta.get("metrics", {}).get(indicator),
        "best epoch": meta.get("epoch"),
        "model": (meta.get("model") or {}).get("name"),
        "run directory": str(run),
        "best weights": str(run / "best"),
    }
    for name in ("curves.png", "metrics.csv", "confusion_matrix.png", "confusion_matrix_val.png", "predictions"):
        if (run / name).exists():
            values[name] = str(run / name)
    if args.started is not None:
        values["wall time (s)"] = round(time.time() - args.started, 1)
    _print_block("summary", values)
    return 0


def _print_block(title: str, values: dict[str, Any]) -> None:
    print(f"\n== {title} ==")
    for k, v in values.items():
        print(f"  {k:<18} {v:.4f}" if isinstance(v, float) else f"  {k:<18} {v}")


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

    p = verbs.add_parser("eval", help="evaluate a run directory on a dataset split")
    p.add_argument("source", help="a run directory, or its best/ or last/")
    p.add_argument("--data", help="the dataset root (default: the one the run was trained on)")
    p.add_argument("--split", default="val", help="the split to evaluate (default: val)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true", help="print every metric as JSON")
    p.set_defaults(func=cmd_eval)

    p = verbs.add_parser("predict", help="predict images (files or folders) with a run directory or model name")
    p.add_argument("source", help="a run directory, a model directory or a registry name")
    p.add_argument("inputs", nargs="+", help="image files or folders")
    p.add_argument("--topk", type=int, default=5)
    p.add_argument("--save-dir", help="write a picture of each prediction here")
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_predict)

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``oarkit`` console script and of tools/*.py."""
    _setup_environment()
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
