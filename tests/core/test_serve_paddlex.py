"""PaddleX's basic-serving routes on ``oarkit serve``: ``/image-classification`` on a classifier run and ``/ocr`` on
the ``ocr`` pipeline name answer PaddleX's envelope with what the predictors answer, and every refusal (a URL,
a PDF, a missing field, bad JSON, bad base64, a setting that cannot be honoured, no API key, a body over the
limit) is PaddleX's envelope with the HTTP status as its error code."""

from __future__ import annotations

import base64
import os

import cv2
import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("oarkit.ocr")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.serve import ServeConfig, create_app  # noqa: E402

KEY_ENV = "OARKIT_TEST_PADDLEX_KEY"


@pytest.fixture(scope="module")
def page() -> tuple[np.ndarray, bytes]:
    """A rendered page of three English lines and its PNG file."""
    from oarkit.ocr import render_page

    image = render_page(["Serving moves over", "PaddleX clients work", "without a change"], size=(200, 420),
                        seed=4).image
    return image, cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))[1].tobytes()


@pytest.fixture(scope="module")
def client(colour_clas_run):
    """The classifier run and the default OCR pipeline, served together."""
    config = ServeConfig(sources=(str(colour_clas_run), "ocr"), max_body_mb=1)
    with TestClient(create_app(config, background_load=False)) as served:
        yield served


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _refused(answer, status: int, words: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"logId", "errorCode", "errorMsg"} and body["errorCode"] == status, body
    assert words in body["errorMsg"], body["errorMsg"]


def test_image_classification_answers_the_predictors_topk(client, colour_clas_run):
    from oarkit.clas import Classifier

    image = np.zeros((40, 40, 3), np.uint8)
    image[..., 0] = 220  # red
    file = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))[1].tobytes()
    answer = client.post("/image-classification", json={"image": _b64(file), "topk": 2})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["errorCode"] == 0 and body["errorMsg"] == "Success" and len(body["logId"]) == 36
    want = Classifier(str(colour_clas_run), topk=2)([image])[0]
    got = body["result"]["categories"]
    assert [(c["id"], c["name"]) for c in got] == list(zip(want.class_ids, want.labels))
    assert np.allclose([c["score"] for c in got], want.scores, atol=1e-5)


def test_ocr_answers_the_pipelines_lines_with_pruned_result(client, page):
    from oarkit.ocr import OCR

    image, file = page
    want = OCR()([image])[0]
    assert len(want.lines) == 3, want.text
    answer = client.post("/ocr", json={"file": _b64(file), "fileType": 1, "visualize": False})
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["dataInfo"] == {"width": 420, "height": 200, "type": "image"}
    (pruned,) = [r["prunedResult"] for r in result["ocrResults"]]
    assert pruned["rec_texts"] == [line.text for line in want.lines]
    assert np.allclose(pruned["rec_scores"], [line.score for line in want.lines], atol=1e-5)
    assert pruned["rec_polys"] == [np.round(line.box).astype(int).tolist() for line in want.lines]
    for poly, box in zip(pruned["rec_polys"], pruned["rec_boxes"]):
        xs, ys = [p[0] for p in poly], [p[1] for p in poly]
        assert box == [min(xs), min(ys), max(xs), max(ys)]


def test_refusals_are_paddlex_envelopes_and_the_next_request_is_answered(client, page):
    _, file = page
    _refused(client.post("/ocr", json={"file": "https://example.com/page.png"}), 422, "fetches nothing")
    _refused(client.post("/ocr", json={"file": _b64(file), "fileType": 0}), 422, "PDF")
    _refused(client.post("/ocr", json={"fileType": 1}), 422, "no 'file'")
    _refused(client.post("/ocr", content=b"{not json", headers={"content-type": "application/json"}), 422,
             "not valid JSON")
    _refused(client.post("/ocr", json=[1, 2]), 422, "JSON object")
    _refused(client.post("/ocr", json={"file": "@@@ not base64"}), 400, "not valid base64")
    _refused(client.post("/ocr", json={"file": _b64(b"plain text, no image")}), 400, "not an image file")
    _refused(client.post("/ocr", json={"file": _b64(file), "textDetThresh": 0.2}), 422, "textDetThresh")
    _refused(client.post("/image-classification", json={"image": _b64(file), "topk": "two"}), 400,
             "params.topk must be a int")
    _refused(client.post("/ocr", json={"file": "A" * (2 << 20)}), 413, "over this server's limit")
    assert client.post("/ocr", json={"file": _b64(file)}).json()["errorCode"] == 0


def test_the_api_key_guards_paddlex_routes_in_their_envelope(colour_clas_run, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "s3cret")
    config = ServeConfig(sources=(str(colour_clas_run),), api_key_env=KEY_ENV)
    image = cv2.imencode(".png", np.full((8, 8, 3), 30, np.uint8))[1].tobytes()
    with TestClient(create_app(config, background_load=False)) as served:
        _refused(served.post("/image-classification", json={"image": _b64(image)}), 401, "requires an API key")
        answer = served.post("/image-classification", json={"image": _b64(image)},
                             headers={"Authorization": "Bearer s3cret"})
        assert answer.status_code == 200 and answer.json()["errorCode"] == 0
        assert served.post("/ocr", json={"file": _b64(image)}, headers={"Authorization": "Bearer s3cret"}
                           ).status_code == 404  # no OCR model served: no /ocr route
