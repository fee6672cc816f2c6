"""Where onnxruntime-web comes from: the npm package the Makefile's ``web-deps`` target installs into oarkit's
cache, pinned to :data:`ORT_WEB_VERSION`, and the files of it a web folder vendors."""

from __future__ import annotations

import json
import os
from pathlib import Path

from oarkit.core.errors import OarkitError

#: the onnxruntime-web release every web folder vendors (the Makefile's ORT_WEB_VERSION)
ORT_WEB_VERSION = "1.30.0"

#: what a page needs of onnxruntime-web's ``dist/``: the ES module of the wasm build, the Emscripten loader it
#: imports from ``env.wasm.wasmPaths`` and the SIMD + threads binary (it runs single-threaded where the page is not
#: cross-origin isolated)
ORT_WEB_FILES = ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")


def web_home() -> Path:
    """``$OARKIT_HOME/web`` (default ``~/.cache/oarkit/web``): where ``make web-deps`` installs the npm packages."""
    root = os.environ.get("OARKIT_HOME") or Path.home() / ".cache" / "oarkit"
    return Path(root) / "web"


def install_command() -> str:
    """The npm command that fills :func:`web_home` (what ``make web-deps`` runs)."""
    return (f"npm install --prefix {web_home()} --no-audit --no-fund onnxruntime-web@{ORT_WEB_VERSION} "
            "clipper-lib@6.4.2")


def web_runtime_dir() -> Path:
    """The npm cache's ``node_modules`` holding onnxruntime-web :data:`ORT_WEB_VERSION`.

    Raises:
        OarkitError: onnxruntime-web is missing or another version; the message names ``make web-deps`` and the
            npm command.
    """
    modules = web_home() / "node_modules"
    package = modules / "onnxruntime-web" / "package.json"
    fix = f"run `make web-deps` in the oarkit checkout, or `{install_command()}`"
    if not package.is_file():
        raise OarkitError(f"onnxruntime-web is not installed in {modules} (the web export vendors it from there); "
                          f"{fix}")
    version = json.loads(package.read_text()).get("version")
    if version != ORT_WEB_VERSION:
        raise OarkitError(f"{package.parent} holds onnxruntime-web {version}, the web export needs {ORT_WEB_VERSION}; "
                          f"{fix}")
    missing = [name for name in ORT_WEB_FILES if not (package.parent / "dist" / name).is_file()]
    if missing:
        raise OarkitError(f"onnxruntime-web in {package.parent} lacks dist/{', dist/'.join(missing)}; {fix}")
    return modules


def ort_web_files() -> list[Path]:
    """The onnxruntime-web files a web folder copies into its ``ort/``."""
    dist = web_runtime_dir() / "onnxruntime-web" / "dist"
    return [dist / name for name in ORT_WEB_FILES]


def npm_file(package: str, relative: str) -> Path:
    """A file of another npm package in the cache (``npm_file("clipper-lib", "clipper.js")``).

    Raises:
        OarkitError: it is not there; the message names the command that installs it.
    """
    path = web_home() / "node_modules" / package / relative
    if not path.is_file():
        raise OarkitError(f"{path} is missing (the web export vendors it); run `make web-deps` in the oarkit "
                          f"checkout, or `{install_command()}`")
    return path
