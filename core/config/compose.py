"""Composing a run's config: a YAML file (or a packaged recipe name) plus ``key=value`` overrides.

Group choices (``optimizer=adamw``, ``quant=qat``) go to Hydra's composition; value overrides are applied
here, so that an override of a key that does not exist is reported with its closest valid key, and every
key can be traced to the file or override that set it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict

from oarkit.core.errors import ConfigError, did_you_mean

_MISSING = object()


def packaged_config_root() -> Path:
    """The folder of the configs shipped inside the package (``oarkit.configs``)."""
    return Path(str(resources.files("oarkit.configs")))


def packaged_configs() -> list[str]:
    """Recipe names shipped with oarkit, ``<kit>/<recipe>`` (for example ``clas/pp_lcnet_x0_5_digits_32x32``)."""
    root = packaged_config_root()
    groups = {"trainer", "optimizer", "scheduler", "quant", "distill", "prune"}
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml")
                  if p.relative_to(root).parts[0] not in groups)


def resolve_config_path(source: str | Path) -> Path:
    """A config file from a path, or from a packaged recipe name; a clear error with close names otherwise."""
    path = Path(source)
    if path.is_file():
        return path.resolve()
    for candidate in (packaged_config_root() / f"{source}.yaml", packaged_config_root() / str(source)):
        if candidate.is_file():
            return candidate
    names = packaged_configs()
    hint = did_you_mean(str(source).removesuffix(".yaml"), names)
    raise ConfigError(f"config file {str(source)!r} does not exist.{hint}"
                      " Pass a YAML path or a packaged recipe such as 'clas/pp_lcnet_x0_5_digits_32x32'.")


@dataclass
class Origins:
    """Which file or override set each key of a composed config, for error messages."""

    primary: Path
    files: list[tuple[str, Path]] = field(default_factory=list)  # (package prefix, file)
    overrides: dict[str, str] = field(default_factory=dict)  # key -> override text

    def of(self, key: str) -> str:
        for k, text in self.overrides.items():
            if key == k or key.startswith(k + "."):
                return f"override '{text}'"
        for package, path in reversed(self.files):
            if package and not key.startswith(package + "."):
                continue
            rel = key[len(package) + 1:] if package else key
            node: Any = _load_yaml(path)
            for part in rel.split("."):
                node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
            if node is not _MISSING:
                return f"file {path}"
        return f"file {self.primary}"


def _load_yaml(path: Path) -> dict:
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {err}") from err


def _group_dirs(primary: Path) -> list[Path]:
    return [primary.parent, packaged_config_root()]


def _defaults_files(primary: Path, group_choices: dict[str, str]) -> list[tuple[str, Path]]:
    """The files a primary config's defaults list pulls in, as ``(package, path)``, primary last."""
    files: list[tuple[str, Path]] = []
    for entry in _load_yaml(primary).get("defaults", []) or []:
        if not isinstance(entry, dict):
            continue
        for raw_group, option in entry.items():
            group = raw_group.removeprefix("override ").strip()
            group, _, package = group.partition("@")
            group = group.lstrip("/")
            option = group_choices.get(group, option)
            if option is None:
                continue
            for base in _group_dirs(primary):
                candidate = base / group / f"{option}.yaml"
                if candidate.is_file():
                    files.append((package or group.replace("/", "."), candidate))
                    break
    listed = _listed_groups(primary)
    for group, option in group_choices.items():  # groups appended by an override (quant=qat)
        for base in _group_dirs(primary):
            candidate = base / group / f"{option}.yaml"
            if group not in listed and candidate.is_file():
                files.append(("", candidate) if "@package _global_" in candidate.read_text()[:200]
                             else (group, candidate))
                break
    files.append(("", primary))
    return files


def _listed_groups(primary: Path) -> set[str]:
    """The config groups a primary config's defaults list names."""
    groups = set()
    for entry in _load_yaml(primary).get("defaults", []) or []:
        if isinstance(entry, dict):
            for raw in entry:
                groups.add(raw.removeprefix("override ").strip().partition("@")[0].lstrip("/"))
    return groups


def _is_group(key: str, primary: Path) -> bool:
    return any((base / key).is_dir() for base in _group_dirs(primary))


def load_config(source: str | Path, overrides: Sequence[str] = (), *, validate: bool = True) -> DictConfig:
    """Compose a config file with ``key=value`` overrides, then validate it (see :mod:`.validate`).

    Args:
        source: a YAML path, or a packaged recipe name such as ``clas/pp_lcnet_x0_5_digits_32x32``.
        overrides: Hydra-style overrides: ``trainer.max_epochs=3``, ``optimizer=adamw``, ``+key=v``, ``~key``.
        validate: check keys, types, values and ``_target_`` allow-lists before returning.

    Raises:
        ConfigError: the file, an override, a key, a type or a target is wrong; the message says where.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    primary = resolve_config_path(source)
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as err:
        raise ConfigError(f"cannot parse the overrides {list(overrides)}: {err}") from err
    group_overrides, value_overrides = [], []
    for text, ov in zip(overrides, parsed):
        is_group = _is_group(ov.key_or_group.split("@")[0], primary) and isinstance(ov.value(), str)
        (group_overrides if is_group and not ov.is_delete() else value_overrides).append((text, ov))
    choices = {ov.key_or_group.split("@")[0]: ov.value() for _, ov in group_overrides}
    # A group the recipe does not list in its defaults (``quant=qat`` on a float recipe) is appended to them.
    listed = _listed_groups(primary)
    group_overrides = [(text if text.startswith("+") or ov.key_or_group.split("@")[0] in listed else f"+{text}", ov)
                       for text, ov in group_overrides]
    search = f"hydra.searchpath=[file://{packaged_config_root()}]"
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(primary.parent), version_base="1.3"):
            cfg = compose(config_name=primary.stem, overrides=[search] + [t for t, _ in group_overrides])
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"cannot compose {primary} with {[t for t, _ in group_overrides]}: {err}") from err
    finally:
        GlobalHydra.instance().clear()
    origins = Origins(primary=primary, files=_defaults_files(primary, choices))
    OmegaConf.set_struct(cfg, False)
    for text, ov in value_overrides:
        _apply_override(cfg, text, ov, origins)
    if validate:
        from oarkit.core.config.validate import validate_config

        validate_config(cfg, origins)
    return cfg


def _apply_override(cfg: DictConfig, text: str, ov: Any, origins: Origins) -> None:
    from oarkit.core.config.validate import known_keys

    key = ov.key_or_group
    exists = OmegaConf.select(cfg, key, default=_MISSING, throw_on_missing=False) is not _MISSING
    if ov.is_delete():
        if not exists:
            raise ConfigError(f"override '{text}' deletes {key!r}, which is not in the config")
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        with open_dict(node):
            del node[leaf]
        return
    if not exists and not ov.is_add():
        valid = known_keys(cfg)
        if key not in valid:
            raise ConfigError(f"unknown key {key!r} (from override '{text}').{did_you_mean(key, valid)} "
                              f"Valid keys of this config: see `oarkit train -c {origins.primary} --show-config`.")
    origins.overrides[key] = text
    OmegaConf.update(cfg, key, ov.value(), merge=False, force_add=True)
