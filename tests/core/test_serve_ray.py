"""``oarkit serve RUN --ray --replicas 2`` as a process on a local Ray (127.0.0.1): both replicas load the model,
concurrent predict requests answer what the single-process app answers, and SIGTERM removes it and exits 0.

Slow: a local Ray and two replicas take about half a minute to start on two cores.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import pytest

pytest.importorskip("ray.serve")
pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.serve import ServeConfig, create_app  # noqa: E402

from .conftest import http_get, same_results, start_server  # noqa: E402

pytestmark = pytest.mark.slow

#: how long the local Ray and both replicas may take to come up
START_SECONDS = 180


def _predict(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.status, json.loads(answer.read())


@pytest.fixture(scope="module")
def pictures() -> list[bytes]:
    """Eight PNG files of varied content and size, so that the answers differ between them."""
    rng = np.random.default_rng(2)
    files = []
    for i in range(8):
        image = rng.integers(0, 256, (24 + 8 * i, 40 + 4 * i, 3), dtype=np.uint8)
        image[..., i % 3] = 230
        files.append(cv2.imencode(".png", image)[1].tobytes())
    return files


def test_two_ray_replicas_answer_as_the_single_process_app(colour_clas_run, pictures, tmp_path):
    bodies = [{"inputs": [{"image": base64.b64encode(f).decode()}], "params": {"topk": 2}} for f in pictures]
    bodies.append({"inputs": [{"image": base64.b64encode(f).decode()} for f in pictures[:3]]})
    with TestClient(create_app(ServeConfig(sources=(str(colour_clas_run),)), background_load=False)) as client:
        wanted = [client.post("/v1/models/colours_run/predict", json=body).json() for body in bodies]
    assert all(len(w["results"]) == len(b["inputs"]) for w, b in zip(wanted, bodies))

    # a local Ray, whatever cluster this machine may know
    log_path = tmp_path / "server.log"
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("RAY_ADDRESS", raising=False)
        server, base = start_server([str(colour_clas_run), "--ray", "--replicas", "2"], log_path,
                                    seconds=START_SECONDS, ready_text="ready at", env={"RAY_DEDUP_LOGS": "0"},
                                    cwd=tmp_path)
    print(f"ready after {time.monotonic() - started:.1f} s")
    code = took = None
    try:
        status, listing = http_get(f"{base}/v1/models")
        (entry,) = json.loads(listing)["models"]
        assert status == 200 and {k: entry[k] for k in ("name", "task", "format", "labels", "state")} == {
            "name": "colours_run", "task": "clas", "format": "pytorch", "labels": ["blue", "green", "red"],
            "state": "ready"}

        url = f"{base}/v1/models/colours_run/predict"
        with ThreadPoolExecutor(max_workers=8) as pool:  # concurrent: spread over both replicas and batched
            answers = list(pool.map(lambda body: _predict(url, body), bodies * 2))
        assert [a[0] for a in answers] == [200] * len(answers)
        for (_, answer), want in zip(answers, wanted * 2):
            assert same_results(answer, want), (answer, want)

        paddlex = _predict(f"{base}/image-classification", {"image": bodies[0]["inputs"][0]["image"], "topk": 2})
        assert paddlex[0] == 200 and paddlex[1]["errorCode"] == 0
        assert [c["name"] for c in paddlex[1]["result"]["categories"]] == \
            [t["label"] for t in wanted[0]["results"][0]["topk"]]

        stopped = time.monotonic()
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
        took = time.monotonic() - stopped
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    text = log_path.read_text()
    print(f"exited {code} {took:.1f} s after SIGTERM")
    assert code == 0, text
    assert "starting local Ray on 127.0.0.1" in text and "deploying 2 replicas" in text
    # each replica loaded the model itself (two processes, each with its own log prefix)
    loaders = set(re.findall(r"pid=(\d+)\)\S* loaded colours_run", text))
    assert len(loaders) == 2, text
    with pytest.raises(OSError):  # nothing listens any more
        http_get(f"{base}/v2/health/live", timeout=2)
