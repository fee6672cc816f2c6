"""``ServeConfig``'s Ray settings: ``--replicas`` needs ``--ray``, ``--workers`` is not Ray's, both survive the JSON
a worker or replica reads, and ``--ray`` without Ray Serve installed names the extra to install."""

from __future__ import annotations

import sys

import pytest

from oarkit.core.cli import main
from oarkit.core.errors import ConfigError
from oarkit.core.serve.config import ServeConfig


def test_replicas_need_ray():
    with pytest.raises(ConfigError, match=r"--replicas 2 needs --ray.*--workers 2"):
        ServeConfig(sources=("runs/x",), replicas=2)
    with pytest.raises(ConfigError, match="--replicas must be at least 1, got 0"):
        ServeConfig(sources=("runs/x",), ray=True, replicas=0)
    with pytest.raises(ConfigError, match=r"--workers 3 is uvicorn's; with --ray, scale with --replicas 3"):
        ServeConfig(sources=("runs/x",), ray=True, workers=3)
    config = ServeConfig(sources=("runs/x",), ray=True, replicas=4)
    assert ServeConfig.from_json(config.to_json()) == config
    assert (config.ray, config.replicas) == (True, 4)
    assert (ServeConfig(sources=("runs/x",)).ray, ServeConfig(sources=("runs/x",)).replicas) == (False, 1)


def test_the_command_line_refuses_replicas_without_ray(tmp_path, capsys):
    assert main(["serve", str(tmp_path), "--replicas", "2"]) == 2
    assert "--replicas 2 needs --ray" in capsys.readouterr().err
    assert main(["serve", str(tmp_path), "--ray", "--replicas", "0"]) == 2
    assert "--replicas must be at least 1" in capsys.readouterr().err


def test_ray_not_installed_names_the_extra(monkeypatch):
    from oarkit.core.serve.ray_deploy import require_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without ray imports
    monkeypatch.setitem(sys.modules, "ray.serve", None)
    with pytest.raises(ConfigError, match=r"--ray needs Ray Serve.*pip install 'oarkit\[serve-ray\]'"):
        require_ray()
