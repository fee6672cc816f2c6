"""The static folder a web export writes: the page, the core module, the kit's module, the models, onnxruntime-web
and ``deploy.json``; any static file server serves it (``python -m http.server`` in it is enough)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from oarkit.core.errors import OarkitError
from oarkit.core.export.web.runtime import ORT_WEB_VERSION, ort_web_files

#: the page and the kit-neutral modules, package data of this folder, copied as they are
PAGE_FILES = ("index.html", "oarkit.js", "imageops.js", "page.css")
PAGE_DIR = Path(__file__).resolve().parent


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _inside(out: Path, relative: str) -> Path:
    """``out / relative``, refusing a name that leaves the folder or lands on a file the export writes itself."""
    path = (out / relative).resolve()
    if relative.startswith("/") or out.resolve() not in path.parents:
        raise OarkitError(f"extra file name {relative!r} must be a relative path inside the web folder")
    top = Path(relative).parts[0]
    if relative in (*PAGE_FILES, "kit.js", "deploy.json") or top in ("models", "ort"):
        raise OarkitError(f"extra file name {relative!r} would replace a file the web export writes; rename it")
    return path


def write_web_folder(out: str | Path, *, task_id: str, kit_script: Path, models: dict[str, Path],
                     deploy: dict[str, Any], title: str, extra_files: dict[str, Path] | None = None) -> Path:
    """Write a web folder that runs ``models`` in the browser on onnxruntime-web.

    Args:
        out: the folder (created; ``models/`` and ``ort/`` in it are replaced).
        task_id: the task id the page serves (``clas``, ``ocr``, ...), written into deploy.json.
        kit_script: the kit's ES module (its ``createPredictor(ctx)``), copied to ``kit.js``.
        models: ONNX files by model name, copied to ``models/<name>.onnx``.
        deploy: ``{"models": {name: that model's deploy.yaml as plain JSON}, **anything else the kit reads}``.
        title: the page's title.
        extra_files: more files by their name in the folder (``{"vendor/clipper.js": path, "dict.txt": path}``).

    Returns:
        ``out``.

    Raises:
        OarkitError: onnxruntime-web is not installed (naming ``make web-deps``), a file is missing, a model has
            no deploy entry, or an extra file name leaves the folder.
    """
    out = Path(out)
    per_model = dict(deploy.get("models") or {})
    unknown = sorted(set(per_model) - set(models))
    if unknown:
        raise OarkitError(f"deploy['models'] names {unknown}, which are not among the models {sorted(models)}")
    for name, path in models.items():
        if not name or "/" in name or name.startswith("."):
            raise OarkitError(f"model name {name!r} must be a plain file name (it becomes models/<name>.onnx)")
        if not Path(path).is_file():
            raise OarkitError(f"model {name!r}: {path} does not exist; export the ONNX first")
    if not Path(kit_script).is_file():
        raise OarkitError(f"the kit's web module {kit_script} does not exist (is the package installed whole?)")
    extras = {name: Path(path) for name, path in (extra_files or {}).items()}
    for name, path in extras.items():
        if not path.is_file():
            raise OarkitError(f"extra file {name!r}: {path} does not exist")
    runtime = ort_web_files()  # before writing anything: a missing npm cache fails cleanly

    out.mkdir(parents=True, exist_ok=True)
    for managed in ("models", "ort"):
        shutil.rmtree(out / managed, ignore_errors=True)
    for name in PAGE_FILES:
        _copy(PAGE_DIR / name, out / name)
    _copy(Path(kit_script), out / "kit.js")
    for path in runtime:
        _copy(path, out / "ort" / path.name)
    for name, path in models.items():
        _copy(Path(path), out / "models" / f"{name}.onnx")
    for name, path in extras.items():
        _copy(path, _inside(out, name))
    manifest = {"task": task_id, "title": title,
                "models": {name: {"file": f"models/{name}.onnx", **dict(per_model.get(name) or {})}
                           for name in models},
                **{k: v for k, v in deploy.items() if k != "models"},
                "runtime": {"onnxruntime-web": ORT_WEB_VERSION}}
    (out / "deploy.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
    return out
