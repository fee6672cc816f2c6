"""The Paddle side of the parity tests: the scripts in paddle_side/ run in .venv-paddle (paddlepaddle 3.3.1 and the
kits' wheels), once per test module, in a subprocess that writes every output the module compares.

A missing Paddle environment fails these tests (``make paddle-env`` builds it); it does not skip them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PADDLE_PYTHON = Path(os.environ.get("OARKIT_PADDLE_PYTHON", ROOT / ".venv-paddle" / "bin" / "python"))
PADDLE_SIDE = Path(__file__).parent / "paddle_side"

#: ``run_paddle_side(script, *args, env=None)``: run ``paddle_side/<script>`` with ``args`` in .venv-paddle
PaddleSideRunner = Callable[..., None]


def _run(script: str, *args: str | Path, env: dict[str, str] | None = None, timeout: int = 900) -> None:
    if not PADDLE_PYTHON.exists():
        pytest.fail(f"the Paddle environment is missing ({PADDLE_PYTHON}); build it with `make paddle-env`")
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    environ.update(env or {})
    run = subprocess.run([str(PADDLE_PYTHON), str(PADDLE_SIDE / script), *map(str, args)], capture_output=True,
                         text=True, timeout=timeout, env=environ)
    if run.returncode != 0:
        pytest.fail(f"the Paddle side ({script}) failed ({run.returncode}):\n{run.stderr[-4000:]}")


@pytest.fixture(scope="session")
def run_paddle_side() -> PaddleSideRunner:
    """Runs a Paddle-side script (``run_paddle_side("clas_parity.py", out_dir, *names)``); the test fails with
    the script's error output when it fails. Call it from a module-scoped fixture, so Paddle starts once a module."""
    return _run
