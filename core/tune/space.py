"""The search space of ``oarkit tune``: ``--space KEY=LOW:HIGH[:log]`` ranges and ``--space KEY=A,B,C`` choices.

Two ints make an int range, anything else numeric a float range (``:log`` samples log-uniformly); a comma list
is a categorical choice (its items read as numbers, booleans or strings; a config group such as
``optimizer=sgd,adamw`` is a choice of files). Keys are checked against the composed config before any trial
runs, with the config loader's own key list and did-you-mean.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig

from oarkit.core.errors import ConfigError, did_you_mean

#: the value types a categorical choice may hold (what Optuna stores)
Choice = bool | int | float | str | None

_KEY = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")
_EXAMPLES = "e.g. --space optimizer.lr=1e-4:1e-1:log, --space data.batch_size=8:32, --space optimizer=sgd,adamw"


@dataclass(frozen=True)
class SearchParam:
    """One dimension of the search: a config key and the values a trial may give it.

    Attributes:
        key: the dotted config key (``optimizer.lr``) or config group (``optimizer``).
        kind: ``int``, ``float`` or ``categorical``.
        low: the smallest value of a range (inclusive).
        high: the largest value of a range (inclusive).
        log: sample a range log-uniformly.
        choices: the values of a categorical choice.
        text: the ``--space`` entry it was parsed from, for messages.
    """

    key: str
    kind: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    choices: tuple[Choice, ...] = ()
    text: str = ""

    def suggest(self, trial: Any) -> Choice:
        """The value an Optuna trial draws for this dimension."""
        if self.kind == "int":
            return trial.suggest_int(self.key, int(self.low), int(self.high), log=self.log)
        if self.kind == "float":
            return trial.suggest_float(self.key, float(self.low), float(self.high), log=self.log)
        return trial.suggest_categorical(self.key, list(self.choices))

    def extremes(self) -> list[Choice]:
        """The values that bound what a trial may set: both ends of a range, every choice."""
        return [self.low, self.high] if self.kind != "categorical" else list(self.choices)

    def describe(self) -> str:
        """``optimizer.lr in [0.0001, 0.1] (log)``, ``optimizer in {sgd, adamw}``."""
        if self.kind == "categorical":
            return f"{self.key} in {{{', '.join(format_value(c) for c in self.choices)}}}"
        return f"{self.key} in [{self.low}, {self.high}] ({self.kind}{', log' if self.log else ''})"


def _number(text: str) -> int | float | None:
    """An int or float read from ``text`` (``1e-4`` included, which YAML 1.1 reads as a string); else None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def _choice(text: str) -> Choice:
    number = _number(text)
    if number is not None:
        return number
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (bool, str)) or value is None else text


def parse_space_entry(text: str) -> SearchParam:
    """One ``--space`` entry as a :class:`SearchParam`.

    Raises:
        ConfigError: the entry is not ``KEY=LOW:HIGH[:log]`` or ``KEY=A,B[,...]``, or its bounds are wrong.
    """
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value:
        raise ConfigError(f"--space {text!r} must read KEY=LOW:HIGH[:log] or KEY=A,B,C ({_EXAMPLES})")
    if not _KEY.match(key):
        raise ConfigError(f"--space {text!r}: {key!r} is not a dotted config key such as optimizer.lr")
    if "," in value:
        items = [item.strip() for item in value.split(",")]
        if any(not item for item in items):
            raise ConfigError(f"--space {text!r} has an empty choice; list the values as A,B,C")
        choices = tuple(_choice(item) for item in items)
        if len(set(map(repr, choices))) != len(choices):
            raise ConfigError(f"--space {text!r} lists a choice twice; list each value once")
        return SearchParam(key=key, kind="categorical", choices=choices, text=text)
    parts = value.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2].strip().lower() != "log"):
        raise ConfigError(f"--space {text!r} must read KEY=LOW:HIGH, KEY=LOW:HIGH:log or KEY=A,B,C ({_EXAMPLES})")
    low, high = _number(parts[0].strip()), _number(parts[1].strip())
    if low is None or high is None:
        raise ConfigError(f"--space {text!r}: the bounds of a range must be numbers (LOW:HIGH such as 1e-4:1e-1 "
                          f"or 8:32); for a choice of words list them as A,B,C")
    log = len(parts) == 3
    kind = "int" if isinstance(low, int) and isinstance(high, int) else "float"
    if not low < high:
        raise ConfigError(f"--space {text!r}: LOW must be below HIGH; a fixed value is an override ({key}={low})")
    if log and low <= 0:
        raise ConfigError(f"--space {text!r}: a log range needs LOW > 0, got {low}")
    return SearchParam(key=key, kind=kind, low=low, high=high, log=log, text=text)


def parse_space(entries: Sequence[str | SearchParam]) -> list[SearchParam]:
    """Every ``--space`` entry, parsed (a :class:`SearchParam` is kept as it is); a key given twice is an error.

    Raises:
        ConfigError: an entry is malformed, a key repeats, or there is no entry at all.
    """
    if not entries:
        raise ConfigError(f"tune needs at least one --space entry ({_EXAMPLES})")
    params = [e if isinstance(e, SearchParam) else parse_space_entry(e) for e in entries]
    seen: set[str] = set()
    for param in params:
        if param.key in seen:
            raise ConfigError(f"--space names {param.key!r} twice; give each key one entry")
        seen.add(param.key)
    return params


def format_value(value: Choice) -> str:
    """A value as the override syntax writes it (``true``, ``null``, ``0.001``, ``adamw``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return repr(value) if isinstance(value, float) else str(value)


def space_overrides(values: dict[str, Choice]) -> list[str]:
    """``key=value`` overrides that set a trial's values."""
    return [f"{key}={format_value(value)}" for key, value in values.items()]


def _config_groups(recipe: Path) -> set[str]:
    from oarkit.core.config import packaged_config_root

    groups = set()
    for base in (recipe.parent, packaged_config_root()):
        groups |= {p.name for p in base.iterdir() if p.is_dir() and any(p.glob("*.yaml"))}
    return groups


def check_space(params: Sequence[SearchParam], cfg: DictConfig, recipe: str | Path,
                overrides: Sequence[str] = ()) -> None:
    """Refuse, before any trial, a space the recipe cannot take.

    Each key must be a key of the composed config (or a parameter of the ``_target_`` it belongs to), or a
    config group for a choice; the recipe must then compose with both ends of every range and every choice.

    Args:
        params: the parsed space.
        cfg: the recipe composed with ``overrides``.
        recipe: the recipe path or packaged name.
        overrides: the command line's ``key=value`` overrides.

    Raises:
        ConfigError: an unknown key (with the closest valid keys), a key both overridden and searched, a range on
            a config group, or a value the config refuses.
    """
    from oarkit.core.config import known_keys, load_config, resolve_config_path

    valid = known_keys(cfg)
    groups = _config_groups(resolve_config_path(recipe))
    overridden = {o.partition("=")[0].lstrip("+~") for o in overrides}
    for param in params:
        if param.key in overridden:
            raise ConfigError(f"{param.key!r} is both an override and a --space entry ({param.text!r}); drop one")
        if param.key in groups:
            if param.kind != "categorical":
                raise ConfigError(f"--space {param.text!r}: {param.key!r} is a config group; search it with a "
                                  f"choice of its files, e.g. {param.key}=A,B")
            continue
        if param.key not in valid:
            raise ConfigError(f"unknown key {param.key!r} in --space {param.text!r}."
                              f"{did_you_mean(param.key, [*valid, *groups])} Valid keys of this config: see "
                              f"`oarkit train -c {recipe} --show-config`.")
    # The bounds, composed: a type or value the config refuses fails here, not in trial 7.
    rounds = max(len(p.extremes()) for p in params)
    for i in range(rounds):
        values = {p.key: p.extremes()[min(i, len(p.extremes()) - 1)] for p in params}
        try:
            load_config(recipe, [*overrides, *space_overrides(values)])
        except ConfigError as err:
            raise ConfigError(f"the search space does not fit the recipe (with {values}): {err}") from err
