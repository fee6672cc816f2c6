"""Every test starts from the same state whatever ran before it, so a verdict never depends on order or run.

- Seeds: ``random``, NumPy and torch are seeded from the test's node id before it runs, and a module- or
  session-scoped fixture is built from a seed of its own name with the global RNG state put back afterwards, so
  it is the same object (and leaves the same streams) whichever test happens to build it first.
- torch's process-wide settings: the intra-op thread count (float reductions depend on it), deterministic
  algorithms, grad mode, the default dtype and the float32 matmul precision are set to one baseline before each
  test and put back after it; so are the working directory and the environment variables.
- Order: pytest-randomly (the dev extra) shuffles modules and the tests inside them on every run and names its
  seed in the header and after the summary; ``--randomly-seed=N`` replays an order and ``-p no:randomly``
  runs in file order. Its own per-test reseeding (from the run's seed) is switched off: the seeds here depend on the
  node id alone, so a test draws the same numbers in any order and on any run.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Before torch, albumentations or huggingface_hub are imported by any test module; a value already set wins.
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # no update check over the network at import
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a mistaken hub name fails at once instead of retrying for ~30 s
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"oarkit-inductor-{os.getuid()}"))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OMP_NUM_THREADS", "1")  # NUM_THREADS, for the subprocesses tests start (CLI, torchrun)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

#: intra-op threads in every test. A constant, so float sums split the same way on any machine (a tiny BERT
#: trained for three epochs reached 21% dev accuracy with two threads and 32% with one); and one, because OpenMP
#: threads spin on a loaded machine: a tiny BERT training step took 1.0-1.6 s with two threads on two busy cores,
#: 76 ms with one.
NUM_THREADS = 1


def _seed(key: str) -> None:
    seed = zlib.crc32(key.encode())
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _baseline() -> None:
    """torch's process-wide settings as a fresh interpreter has them (threads: a constant)."""
    torch.set_num_threads(NUM_THREADS)
    torch.use_deterministic_algorithms(False)
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = False


def _rng_state() -> tuple[Any, Any, torch.Tensor]:
    return random.getstate(), np.random.get_state(), torch.get_rng_state()


def _set_rng_state(state: tuple[Any, Any, torch.Tensor]) -> None:
    random.setstate(state[0])
    np.random.set_state(state[1])
    torch.set_rng_state(state[2])


class SharedFixtureSeeds:
    """A shared fixture is built from a seed of its own name and the baseline, and leaves the test's RNG streams
    as they were, so it is the same whichever test builds it first.

    A plugin rather than a conftest hook: pytest asks a session-scoped fixture's hooks of the session, which sees
    only the conftest files at the root (and DESIGN.md keeps none there).
    """

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Iterator[Any]:
        if fixturedef.scope == "function":
            return (yield)
        state = _rng_state()
        _baseline()
        _seed(f"{fixturedef.baseid}::{fixturedef.argname}[{getattr(request, 'param_index', 0)}]")
        try:
            return (yield)
        finally:
            _baseline()
            _set_rng_state(state)


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("oarkit-shared-fixture-seeds"):
        config.pluginmanager.register(SharedFixtureSeeds(), "oarkit-shared-fixture-seeds")
    if config.pluginmanager.hasplugin("randomly"):
        # pytest-randomly would reseed random and NumPy before each test phase from the run's seed (a new one every
        # run), overriding the node-id seeds of `isolated` below; keep its shuffling only.
        config.option.randomly_reset_seed = False


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.hasplugin("randomly") and isinstance(seed, int):
        # The header that names the seed is hidden under -q: repeat it where a failure is read.
        terminalreporter.write_line(f"test order: --randomly-seed={seed} replays it, "
                                    "-p no:randomly runs in file order")


@pytest.fixture(autouse=True)
def isolated(request: pytest.FixtureRequest) -> Iterator[None]:
    """Seeds from the node id and torch's baseline settings; the directory and environment are put back after."""
    cwd, environ = os.getcwd(), dict(os.environ)
    _baseline()
    _seed(request.node.nodeid)
    yield
    _baseline()
    if os.getcwd() != cwd:
        os.chdir(cwd)
    for key in set(os.environ) - set(environ):
        del os.environ[key]
    for key, value in environ.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty oarkit cache under ``tmp_path``."""
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "oarkit"))
    return tmp_path


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list:
    """Records (and refuses) every attempt to open a network connection."""
    attempts: list = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


# -- prune= runs of every kit (tests/*/test_prune.py) -----------------------------------------------------------------
def _check_pruned(run: Path, float_run: Path, flops: float = 0.5, data: Path | None = None) -> dict[str, Any]:
    """A pruned run's record and its reload: FLOPs at the target within 5 %, fewer parameters in the model that
    ``load_model`` rebuilds from meta.json alone, and an ONNX export that verifies; returns the prune record."""
    import json

    from oarkit.core import load_model
    from oarkit.core.cli import main

    record = json.loads((Path(run) / "best" / "meta.json").read_text())["prune"]
    assert record["flops"] == flops and abs(record["flops_after"] / record["flops_before"] / flops - 1) <= 0.05
    assert record["modules"], "a pruned run records the sizes it changed"
    size = lambda model: sum(p.numel() for p in model.parameters())  # noqa: E731
    assert size(load_model(str(run))) < size(load_model(str(float_run)))
    args = ["--data", str(data)] if data is not None else []
    assert main(["export", str(run), "--format", "onnx", "--verify", *args]) == 0
    report = json.loads((Path(run) / "export" / "report.json").read_text())
    assert [(r["format"], r["status"]) for r in report["rows"]] == [("onnx", "pass")]
    return record


@pytest.fixture
def check_pruned():
    """:func:`_check_pruned`, for the kits' pruning tests."""
    return _check_pruned


# -- web pages in a headless Chromium (tests/*/test_web*.py) -----------------------------------------------------------
#: Debian's chromium (``make web-deps`` installs it); playwright's own browser downloads are not reachable here
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


#: builds the input ``predict`` gets from a URL, by kind (the page API takes all of them)
WEB_INPUTS = {
    "url": "async (url) => url",
    "blob": "async (url) => await (await fetch(url)).blob()",
    "img": "async (url) => { const im = new Image(); im.src = url; await im.decode(); return im; }",
    "bitmap": "async (url) => await createImageBitmap(await (await fetch(url)).blob(), "
              "{colorSpaceConversion: 'none', premultiplyAlpha: 'none'})",
    "imagedata": "async (url) => { const b = await createImageBitmap(await (await fetch(url)).blob(), "
                 "{colorSpaceConversion: 'none', premultiplyAlpha: 'none'}); const c = new OffscreenCanvas(b.width, "
                 "b.height).getContext('2d'); c.drawImage(b, 0, 0); return c.getImageData(0, 0, b.width, b.height); }",
}


class WebPage:
    """A page of a web export open in Chromium, with every URL it requested (``requests``) and its console errors.

    ``predict(url, kind=...)`` awaits ``window.oarkit.ready`` and returns ``window.oarkit.predict(input)``, the input
    built from ``url`` as ``kind`` says (``url``, ``blob``, ``img``, ``bitmap``, ``imagedata``).
    """

    def __init__(self, context: Any, url: str, timeout_s: float = 60.0) -> None:
        self.context, self.requests, self.errors = context, [], []
        self.page = context.new_page()
        self.page.set_default_timeout(timeout_s * 1000)
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(url)

    def ready(self) -> None:
        self.page.evaluate("async () => { await window.oarkit.ready; }")

    def predict(self, image_url: str, kind: str = "url", options: dict[str, Any] | None = None) -> Any:
        return self.page.evaluate(
            f"async ([url, options]) => {{ await window.oarkit.ready; const make = {WEB_INPUTS[kind]}; "
            "return await window.oarkit.predict(await make(url), options); }", [image_url, options or {}])

    def evaluate(self, script: str, arg: Any = None) -> Any:
        return self.page.evaluate(script, arg)

    def foreign_requests(self, host: str = "127.0.0.1") -> list[str]:
        """Requested URLs not on ``host`` (``data:`` and ``blob:`` URLs are the page's own)."""
        from urllib.parse import urlparse

        return [u for u in self.requests if not u.startswith(("data:", "blob:")) and urlparse(u).hostname != host]


@pytest.fixture(scope="module")
def web_browser() -> Iterator[Any]:
    """A headless Debian Chromium driven by playwright, one per test module; skipped when either is missing.

    Module-scoped: playwright's sync API runs an event loop in this thread while it is started, under which every
    later ``asyncio.run`` fails ("cannot be called from a running event loop": the serve tests use it)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `make web-deps` installs Debian's chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing: pip install 'oarkit[web]'")
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def web_server() -> Iterator[Any]:
    """``serve(folder, isolated=False) -> base URL``: static servers on 127.0.0.1, closed at the session's end."""
    from oarkit.core.export.web.server import StaticServer

    servers: list[StaticServer] = []

    def serve(folder: Path, *, isolated: bool = False) -> str:
        servers.append(StaticServer(folder, isolated=isolated))
        return servers[-1].url

    yield serve
    for server in servers:
        server.close()


@pytest.fixture
def open_web_page(web_browser: Any) -> Iterator[Any]:
    """``open(url, viewport=(1100, 800)) -> WebPage``; the pages' browser contexts are closed after the test."""
    contexts: list[Any] = []

    def open_page(url: str, *, viewport: tuple[int, int] = (1100, 800), timeout_s: float = 60.0) -> WebPage:
        contexts.append(web_browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                                service_workers="block"))
        return WebPage(contexts[-1], url, timeout_s=timeout_s)

    yield open_page
    for context in contexts:
        context.close()
