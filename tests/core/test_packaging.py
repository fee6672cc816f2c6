"""Packaging: every source folder is listed in pyproject's packages (a missing one silently leaves the wheel)."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_every_subpackage_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    listed = set(config["packages"])
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("*"):
            if init.is_dir() and "__pycache__" not in init.parts and (
                    (init / "__init__.py").exists() or any(init.glob("*.yaml"))):
                found.add(package + "." + ".".join(init.relative_to(ROOT / folder).parts))
        found.add(package)
    missing = sorted(found - listed)
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {missing}"
    stale = sorted(p for p in listed if p not in found)
    assert not stale, f"pyproject lists packages with no folder: {stale}"


def test_every_config_group_folder_is_a_package():
    for folder in (ROOT / "configs").rglob("*"):
        if folder.is_dir() and any(folder.glob("*.yaml")):
            assert (folder / "__init__.py").exists(), f"{folder} needs an __init__.py (Hydra pkg:// lookup)"


def test_console_script_and_tools_share_the_verbs():
    from oarkit.core.cli import build_parser

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["oarkit"] == "oarkit.core.cli:main"
    verbs = set(build_parser()._subparsers._group_actions[0].choices)
    tools = {p.stem.replace("_", "-") for p in (ROOT / "tools").glob("*.py")}
    assert verbs == tools


def test_importing_a_transformers_kit_prints_nothing():
    # transformers imports torchao, whose enum registration makes torch 2.14 log a deprecation notice twice on every
    # start; a user running `python -m oarkit.nlp` must see only oarkit's output.
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import oarkit.nlp, oarkit.seg"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "" and "Enum subclass" not in proc.stderr, proc.stderr[-2000:]
