"""``oarkit serve``'s app on a tiny clas run: endpoints, answers equal to the predictor's, batching invariance, bad
input, backpressure (503), the body limit (413), the API key (401), metrics.

The run is PP-LCNet x0.25 trained two epochs on 32x32 colour images (about ten seconds); the app runs in process
(FastAPI's TestClient, or httpx's ASGI transport for concurrent requests).
"""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.serve import ServeConfig, create_app  # noqa: E402

from .conftest import same_results  # noqa: E402

COLOURS = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200)}


@pytest.fixture
def clas_run(colour_clas_run) -> Path:
    return colour_clas_run


@pytest.fixture(scope="module")
def pictures() -> list[bytes]:
    """Eight PNG files of varied content and size (so that the model's answers differ between them)."""
    rng = np.random.default_rng(1)
    files = []
    for i in range(8):
        size = (24 + 8 * i, 40 + 4 * i)
        image = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
        image[..., i % 3] = 230
        files.append(cv2.imencode(".png", image)[1].tobytes())
    return files


def expected(run: Path, files: list[bytes], **options) -> list[dict]:
    """What the in-process predictor answers for the same files, as ``oarkit predict`` would read them."""
    from oarkit.clas import Classifier

    arrays = [cv2.cvtColor(cv2.imdecode(np.frombuffer(f, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
              for f in files]
    return [r.to_dict() for r in Classifier(str(run), **options)(arrays)]


def served(run: Path, **settings) -> TestClient:
    return TestClient(create_app(ServeConfig(sources=(str(run),), **settings), background_load=False))


def multipart(files: list[bytes]) -> list[tuple[str, tuple[str, bytes, str]]]:
    return [("file", (f"image_{i}.png", data, "image/png")) for i, data in enumerate(files)]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def png_header(width: int, height: int) -> bytes:
    """A PNG file whose (valid, CRC-checked) header claims ``width`` x ``height`` pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + \
        chunk(b"IEND", b"")


# ----------------------------------------------------------------------------- endpoints and answers
def test_endpoints_describe_the_model(clas_run):
    with served(clas_run) as client:
        assert client.get("/v2/health/live").json() == {"live": True}
        ready = client.get("/v2/health/ready")
        assert ready.status_code == 200 and ready.json()["models"] == {"colours_run": "ready"}
        (entry,) = client.get("/v1/models").json()["models"]
        assert {k: entry[k] for k in ("name", "task", "source", "format", "labels")} == {
            "name": "colours_run", "task": "clas", "source": str(clas_run), "format": "pytorch",
            "labels": ["blue", "green", "red"]}
        assert entry["params"] == ["topk"] and entry["state"] == "ready" and entry["load_seconds"] > 0
        meta = client.get("/v2/models/colours_run").json()
        assert meta["name"] == "colours_run" and meta["inputs"][0]["datatype"] == "BYTES"
        assert client.get("/v2/models/colours_run/ready").json()["ready"] is True
        assert client.get("/docs").status_code == 200
        paths = client.get("/openapi.json").json()["paths"]
        assert {"/v2/health/live", "/v2/health/ready", "/v2/models/{name}", "/v2/models/{name}/infer",
                "/v1/models", "/v1/models/{name}/predict", "/metrics"} <= set(paths)
        infer = client.post("/v2/models/colours_run/infer", json={"inputs": []})
        assert infer.status_code == 501 and "export" in infer.json()["error"]


def test_predict_answers_what_the_predictor_answers(clas_run, pictures):
    with served(clas_run) as client:
        form = client.post("/v1/models/colours_run/predict", files=multipart(pictures[:3]))
        assert form.status_code == 200
        assert form.json() == {"results": expected(clas_run, pictures[:3])}
        body = {"inputs": [{"image": b64(p)} for p in pictures[3:6]], "params": {"topk": 2}}
        answer = client.post("/v1/models/colours_run/predict", json=body).json()
        assert answer == {"results": expected(clas_run, pictures[3:6], topk=2)}
        assert all(len(r["topk"]) == 2 for r in answer["results"])
        # a form's other fields are params too, read as JSON
        topk1 = client.post("/v1/models/colours_run/predict", files=multipart(pictures[:1]), data={"topk": "1"})
        assert topk1.json()["results"] == expected(clas_run, pictures[:1], topk=1)


async def _concurrently(app, requests: list[dict]) -> list[httpx.Response]:
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            return await asyncio.gather(*(client.post("/v1/models/colours_run/predict", **r) for r in requests))


def test_batching_never_changes_an_answer(clas_run, pictures):
    """Concurrent requests (one or two images, two params) batched together answer what each alone does."""
    app = create_app(ServeConfig(sources=(str(clas_run),), max_batch_size=8, max_delay_ms=200),
                     background_load=False)
    requests, wanted = [], []
    for i, picture in enumerate(pictures):
        files = [picture, pictures[(i + 3) % len(pictures)]] if i % 3 == 0 else [picture]
        topk = 1 + i % 2
        requests.append({"json": {"inputs": [{"image": b64(f)} for f in files], "params": {"topk": topk}}})
        wanted.append(expected(clas_run, files, topk=topk))
    answers = asyncio.run(_concurrently(app, requests))
    assert [a.status_code for a in answers] == [200] * len(requests)
    assert all(same_results(a.json()["results"], w) for a, w in zip(answers, wanted))
    metrics = app.state.metrics
    count = metrics.batch_size.labels(model="colours_run")._sum.get()
    batches = sum(b.get() for b in metrics.batch_size.labels(model="colours_run")._buckets)
    assert count == sum(len(r["json"]["inputs"]) for r in requests) and batches < len(requests)  # some batched


def test_a_full_queue_answers_503_with_retry_after(clas_run, pictures):
    app = create_app(ServeConfig(sources=(str(clas_run),), max_queue=2, max_batch_size=64, max_delay_ms=1000),
                     background_load=False)
    answers = asyncio.run(_concurrently(app, [{"files": multipart([p])} for p in pictures[:6]]))
    codes = [a.status_code for a in answers]
    assert codes.count(200) == 2 and codes.count(503) == 4
    for answer, picture in zip(answers, pictures):
        if answer.status_code == 503:
            assert int(answer.headers["Retry-After"]) >= 1 and "--max-queue" in answer.json()["error"]
        else:
            assert same_results(answer.json()["results"], expected(clas_run, [picture]))


def test_not_ready_until_loaded(clas_run, pictures):
    client = served(clas_run)  # not entered: the app has not started, nothing is loaded
    ready = client.get("/v2/health/ready")
    assert ready.status_code == 503 and ready.json() == {"ready": False, "models": {"colours_run": "loading"}}
    assert client.get("/v2/health/live").status_code == 200
    loading = client.post("/v1/models/colours_run/predict", files=multipart(pictures[:1]))
    assert loading.status_code == 503 and "still loading" in loading.json()["error"]


# ----------------------------------------------------------------------------- bad input
def _bad_requests(pictures: list[bytes]) -> list[tuple[str, str, dict, int, str]]:
    good = pictures[0]
    return [
        ("truncated image", "post", {"files": multipart([good[: len(good) // 2]])}, 400, "damaged PNG"),
        ("text file", "post", {"files": [("file", ("notes.txt", b"hello, not an image\n", "text/plain"))]}, 400,
         "not an image file"),
        ("empty file", "post", {"files": [("file", ("empty.png", b"", "image/png"))]}, 400, "is empty"),
        ("absurd size", "post", {"files": multipart([png_header(100_000, 100_000)])}, 400, "too large an image"),
        ("too tall", "post", {"files": multipart([png_header(30, 25_000)])}, 400, "30x25000 PNG"),
        ("empty form", "post", {"data": {"topk": "2"}}, 400, "no 'file' field"),
        ("a file in another field", "post", {"files": [("other", ("x.png", good, "image/png"))]}, 400,
         "'other' is a file"),
        ("file field as text", "post", {"data": {"file": "cat.png"}, "files": [("x", ("", b"", ""))]}, 400,
         "must be a file upload"),
        ("malformed JSON", "post", {"content": b'{"inputs": [', "headers": {"content-type": "application/json"}},
         400, "not valid JSON"),
        ("empty body", "post", {"content": b"", "headers": {"content-type": "application/json"}}, 400, "empty"),
        ("missing inputs", "post", {"json": {"params": {}}}, 400, "lacks the field 'inputs'"),
        ("unknown field", "post", {"json": {"input": []}}, 400, "unknown field"),
        ("inputs not a list", "post", {"json": {"inputs": "cat.png"}}, 400, "non-empty list"),
        ("text to an image model", "post", {"json": {"inputs": [{"text": "hello"}]}}, 400, '{"image"'),
        ("bad base64", "post", {"json": {"inputs": [{"image": "***"}]}}, 400, "not valid base64"),
        ("base64 of a text", "post", {"json": {"inputs": [{"image": b64(b"plain words")}]}}, 400, "not an image"),
        ("unknown param", "post", {"json": {"inputs": [{"image": b64(good)}], "params": {"top_k": 2}}}, 400,
         "params.top_k is not a setting"),
        ("param of the wrong type", "post", {"json": {"inputs": [{"image": b64(good)}], "params": {"topk": "2"}}},
         400, "params.topk must be a int"),
        ("params not an object", "post", {"json": {"inputs": [{"image": b64(good)}], "params": [2]}}, 400,
         "'params' must be an object"),
        ("a path as a param", "post", {"json": {"inputs": [{"image": b64(good)}], "params": {"source": "/etc"}}},
         400, "not a setting"),
        ("another content type", "post", {"content": b"x", "headers": {"content-type": "text/plain"}}, 415,
         "Content-Type"),
        ("unknown model", "post", {"files": multipart([good])}, 404, "no model named 'colours'"),
        ("wrong method", "get", {}, 405, "use POST"),
        ("unknown path", "get", {}, 404, "no endpoint"),
    ]


def test_bad_input_answers_4xx_json_and_the_server_goes_on(clas_run, pictures):
    with served(clas_run) as client:
        for name, method, kwargs, status, fragment in _bad_requests(pictures):
            url = {"unknown model": "/v1/models/colours/predict", "unknown path": "/v1/nothing"}.get(
                name, "/v1/models/colours_run/predict")
            answer = client.request(method.upper(), url, **kwargs)
            assert answer.status_code == status, (name, answer.text)
            assert fragment in answer.json()["error"], (name, answer.json())
        # one good request next to a bad one: the bad one is refused alone, the next good one is answered
        mixed = client.post("/v1/models/colours_run/predict", files=multipart([pictures[1], b"GIF89a broken"]))
        assert mixed.status_code == 400 and "image_1.png" in mixed.json()["error"]
        good = client.post("/v1/models/colours_run/predict", files=multipart(pictures[:2]))
        assert good.status_code == 200 and good.json()["results"] == expected(clas_run, pictures[:2])
        text = client.get("/metrics").text
        assert 'oarkit_serve_requests_total{code="400",model="colours_run"}' in text
        assert 'code="500"' not in text


def test_oip_infer_refuses_a_run_directory_and_bad_bodies(clas_run):
    with served(clas_run) as client:
        assert client.post("/v2/models/colours_run/infer", content=b"{").status_code == 400
        assert client.get("/v2/models/nothing").status_code == 404


# ----------------------------------------------------------------------------- limits and the key
def test_a_body_over_the_limit_answers_413_before_it_is_read(clas_run, pictures):
    with served(clas_run, max_body_mb=0.01) as client:  # 10 KiB
        big = np.random.default_rng(0).integers(0, 256, (80, 80, 3), dtype=np.uint8)
        large = cv2.imencode(".png", big)[1].tobytes()
        assert len(large) > 0.01 * 2**20
        declared = client.post("/v1/models/colours_run/predict", files=multipart([large]))
        assert declared.status_code == 413 and "--max-body-mb" in declared.json()["error"]

        def chunks():  # no Content-Length: counted as it streams
            for start in range(0, len(large), 1024):
                yield large[start:start + 1024]

        streamed = client.post("/v1/models/colours_run/predict", content=chunks(),
                               headers={"content-type": "application/json"})
        assert streamed.status_code == 413 and "more than" in streamed.json()["error"]
        small = client.post("/v1/models/colours_run/predict", files=multipart(pictures[:1]))
        assert small.status_code == 200


def test_an_api_key_guards_everything_but_health(clas_run, pictures, monkeypatch):
    monkeypatch.setenv("OARKIT_TEST_SERVE_KEY", "s3cret-token")
    with served(clas_run, api_key_env="OARKIT_TEST_SERVE_KEY") as client:
        assert client.get("/v2/health/live").status_code == 200
        assert client.get("/v2/health/ready").status_code == 200
        for path in ("/v1/models", "/metrics", "/docs", "/v2/models/colours_run"):
            refused = client.get(path)
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer", path
        wrong = client.get("/v1/models", headers={"Authorization": "Bearer s3cret-tokem"})
        assert wrong.status_code == 401 and "wrong API key" in wrong.json()["error"]
        auth = {"Authorization": "Bearer s3cret-token"}
        assert client.get("/v1/models", headers=auth).status_code == 200
        answer = client.post("/v1/models/colours_run/predict", files=multipart(pictures[:1]), headers=auth)
        assert answer.json()["results"] == expected(clas_run, pictures[:1])


def test_metrics_count_requests_batches_queue_and_load_time(clas_run, pictures):
    with served(clas_run) as client:
        client.post("/v1/models/colours_run/predict", files=multipart(pictures[:3]))
        client.post("/v1/models/nothing/predict", files=multipart(pictures[:1]))
        text = client.get("/metrics").text
    assert 'oarkit_serve_requests_total{code="200",model="colours_run"} 1.0' in text
    assert 'oarkit_serve_requests_total{code="404",model=""} 1.0' in text  # unknown names never label metrics
    assert 'oarkit_serve_batch_size_sum{model="colours_run"} 3.0' in text
    assert 'oarkit_serve_request_seconds_count{model="colours_run"} 1.0' in text
    assert 'oarkit_serve_queue_depth{model="colours_run"} 0.0' in text
    load = next(line for line in text.splitlines() if line.startswith("oarkit_serve_model_load_seconds{"))
    assert float(load.split()[-1]) > 0


def test_a_bomb_header_is_refused_before_decoding(clas_run):
    """A 60000x60000 header in a hundred bytes is refused from its header: nothing is allocated for it."""
    from oarkit.core.serve.errors import RequestError
    from oarkit.core.serve.inputs import decode_image

    with pytest.raises(RequestError, match="too large an image"):
        decode_image(png_header(60_000, 60_000), "file 'bomb.png'")
    with pytest.raises(RequestError, match="not an image file"):
        decode_image(io.BytesIO(b"%PDF-1.7 ...").getvalue(), "file 'doc.pdf'")
