"""``oarkit serve`` as a process (uvicorn on a free port: SIGTERM drains in-flight requests and exits 0), its
command-line refusals, and the batcher's own rules (gathering, keys, failures, the queue bound, the drain)."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from oarkit.core.cli import main  # noqa: E402
from oarkit.core.serve.batcher import Batcher, BatcherStopped, QueueFull  # noqa: E402

from .conftest import http_get, start_server  # noqa: E402


@pytest.fixture
def clas_run(colour_clas_run) -> Path:
    return colour_clas_run


def _predict(url: str, body: dict, out: dict) -> None:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=20) as answer:
        out.update(status=answer.status, body=json.loads(answer.read()), seconds=time.perf_counter() - started)


def test_sigterm_finishes_in_flight_requests_and_exits_0(clas_run, tmp_path):
    import base64

    # a long batching delay keeps the request in flight while SIGTERM arrives
    server, base = start_server([str(clas_run), "--max-delay-ms", "3000", "--max-batch-size", "64"],
                                tmp_path / "server.log", seconds=60)
    try:
        picture = cv2.imencode(".png", np.full((32, 32, 3), 90, np.uint8))[1].tobytes()
        answer: dict = {}
        body = {"inputs": [{"image": base64.b64encode(picture).decode()}]}
        client = threading.Thread(target=_predict, args=(f"{base}/v1/models/colours_run/predict", body, answer))
        client.start()
        time.sleep(1.0)  # the request waits in the batcher now
        stopped = time.monotonic()
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=10)
        took = time.monotonic() - stopped
        client.join(timeout=5)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    text = (tmp_path / "server.log").read_text()
    assert code == 0 and took < 10, text
    assert answer.get("status") == 200 and len(answer["body"]["results"]) == 1, (answer, text)
    assert answer["body"]["results"][0]["label"] in ("blue", "green", "red")
    lines = [json.loads(line) for line in text.splitlines() if line.startswith('{"method"')]
    assert {"method": "POST", "path": "/v1/models/colours_run/predict", "model": "colours_run", "status": 200,
            "batch_size": 1} in [{k: v for k, v in line.items() if k != "ms"} for line in lines]
    assert "loaded colours_run" in text and "stopped by SIGTERM" in text
    with pytest.raises(OSError):  # nothing listens any more
        http_get(f"{base}/v2/health/live", timeout=1)


def test_the_command_line_refuses_bad_models_before_binding(clas_run, tmp_path, capsys, monkeypatch):
    assert main(["serve", str(tmp_path / "missing_run")]) == 2
    assert "neither an existing run directory nor a registered model" in capsys.readouterr().err
    assert main(["serve", str(clas_run), str(clas_run)]) == 2
    assert "would both be served as 'colours_run'" in capsys.readouterr().err
    assert main(["serve", str(clas_run), str(clas_run), "--name", "x"]) == 2
    assert "--name names one model" in capsys.readouterr().err
    assert main(["serve", str(clas_run), "--name", "a/b"]) == 2
    assert "not URL-safe" in capsys.readouterr().err
    monkeypatch.delenv("OARKIT_TEST_UNSET_KEY", raising=False)
    assert main(["serve", str(clas_run), "--api-key-env", "OARKIT_TEST_UNSET_KEY"]) == 2
    assert "OARKIT_TEST_UNSET_KEY is unset or empty" in capsys.readouterr().err
    assert main(["serve", str(clas_run), "--max-batch-size", "0"]) == 2
    assert "--max-batch-size must be at least 1" in capsys.readouterr().err


def test_served_names_follow_the_rules(clas_run):
    from oarkit.core.serve.models import served_name

    assert served_name(str(clas_run)) == "colours_run"
    assert served_name(str(clas_run) + "/") == "colours_run"
    assert served_name("clas/pp_lcnet_x1_0") == "clas_pp_lcnet_x1_0"
    assert served_name(str(clas_run), "digits-v2") == "digits-v2"


# ----------------------------------------------------------------------------- the batcher
class Recorder:
    """A batch function that squares numbers, records each batch, and refuses negative numbers."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.batches: list[tuple[list[int], object]] = []
        self.seconds = seconds

    def __call__(self, inputs: list[int], key: object) -> list[int]:
        self.batches.append((list(inputs), key))
        time.sleep(self.seconds)
        if any(x < 0 for x in inputs):
            raise ValueError(f"negative input in {inputs}")
        return [x * x + (100 if key == "plus" else 0) for x in inputs]


def test_batcher_gathers_by_key_and_size_and_answers_each_request():
    async def scenario():
        run = Recorder()
        batcher = Batcher("m", run, max_batch_size=4, max_delay_ms=100, max_queue=100)
        batcher.start()
        jobs = [batcher.submit([1, 2]), batcher.submit([3]), batcher.submit([4], key="plus"), batcher.submit([5]),
                batcher.submit([6, 7, 8, 9, 10])]  # bigger than a batch: runs alone, whole
        answers = await asyncio.gather(*jobs)
        await batcher.stop()
        return run, answers

    run, answers = asyncio.run(scenario())
    assert [a[0] for a in answers] == [[1, 4], [9], [116], [25], [36, 49, 64, 81, 100]]
    assert [a[1] for a in answers] == [4, 4, 1, 4, 5]
    assert sorted(b for b, _ in run.batches) == [[1, 2, 3, 5], [4], [6, 7, 8, 9, 10]]
    assert all(len(b) <= 4 or len(b) == 5 for b, _ in run.batches)


def test_batcher_reruns_a_failed_batch_request_by_request():
    async def scenario():
        run = Recorder()
        batcher = Batcher("m", run, max_batch_size=8, max_delay_ms=50, max_queue=100)
        batcher.start()
        answers = await asyncio.gather(batcher.submit([2]), batcher.submit([-1]), batcher.submit([3]),
                                       return_exceptions=True)
        await batcher.stop()
        return run, answers

    run, answers = asyncio.run(scenario())
    assert answers[0] == ([4], 1) and answers[2] == ([9], 1)
    assert isinstance(answers[1], ValueError) and "negative" in str(answers[1])
    assert run.batches[0][0] == [2, -1, 3] and [b for b, _ in run.batches[1:]] == [[2], [-1], [3]]


def test_batcher_bounds_its_queue_and_drains_on_stop():
    async def scenario():
        batcher = Batcher("m", Recorder(seconds=0.05), max_batch_size=1, max_delay_ms=0, max_queue=2)
        batcher.start()
        first = asyncio.ensure_future(batcher.submit([1]))
        await asyncio.sleep(0.01)  # the first one runs now; two may wait
        waiting = [asyncio.ensure_future(batcher.submit([x])) for x in (2, 3)]
        await asyncio.sleep(0)
        assert batcher.depth == 2
        with pytest.raises(QueueFull, match="--max-queue"):
            await batcher.submit([4])
        await batcher.stop()  # answers what waits
        with pytest.raises(BatcherStopped):
            await batcher.submit([5])
        return [await f for f in [first, *waiting]]

    assert [a[0] for a in asyncio.run(scenario())] == [[1], [4], [9]]


def test_a_lone_request_after_a_batch_of_one_does_not_wait_out_the_delay():
    """With no concurrent traffic the delay is skipped (a client alone pays nothing for batching); after a batch
    that gathered several requests, a request waits for company as before."""
    async def scenario():
        batcher = Batcher("m", Recorder(), max_batch_size=2, max_delay_ms=600_000, max_queue=100)
        batcher.start()
        pair = await asyncio.gather(batcher.submit([1]), batcher.submit([2]))  # a full batch runs at once
        waiting = asyncio.ensure_future(batcher.submit([3]))  # after a batch of two requests: waits for company
        await asyncio.sleep(0.05)
        assert not waiting.done()
        company = await batcher.submit([4])  # fills the batch: both are answered
        whole = await batcher.submit([5, 6])  # a full batch on its own: a batch of one request
        lone = await asyncio.wait_for(batcher.submit([7]), timeout=5)  # alone after it: no 600 s wait
        await batcher.stop()
        return pair, await waiting, company, whole, lone

    pair, three, four, whole, lone = asyncio.run(scenario())
    assert pair == [([1], 2), ([4], 2)] and three == ([9], 2) and four == ([16], 2)
    assert whole == ([25, 36], 2) and lone == ([49], 1)
