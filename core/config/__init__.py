"""Hydra-composed run configs: loading with overrides, validation before work, safe instantiation."""

from oarkit.core.config.build import build_trainer
from oarkit.core.config.compose import load_config, packaged_config_root, packaged_configs, resolve_config_path
from oarkit.core.config.targets import ALLOWED_PACKAGES, check_targets, instantiate, locate
from oarkit.core.config.validate import SECTIONS, known_keys, validate_config

__all__ = [
    "ALLOWED_PACKAGES", "SECTIONS", "build_trainer", "check_targets", "instantiate", "known_keys", "load_config",
    "locate", "packaged_config_root", "packaged_configs", "resolve_config_path", "validate_config",
]
