"""``oarkit serve`` on every image kit: seg, det, ocr/det and ocr/rec, each served from a run directory and from
its ONNX export, answer ``/v1/models/{name}/predict`` as the kit's predictor answers in process.

Each run is one optimizer step on a tiny synthetic set (the OCR ones start from PaddleOCR's PP-OCRv4 weights that
ship offline, so their pages read as lines); training and exporting all four takes about a minute on two cores.
"""

from __future__ import annotations

import base64
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("onnxruntime")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.cli import main  # noqa: E402
from oarkit.core.serve import ServeConfig, create_app  # noqa: E402

QUIET = ["trainer.progress=false", "trainer.tensorboard=false", "trainer.precision=fp32"]
#: how far a float of to_dict() may move: one step of the rounding it applies (OCR boxes: 1 decimal)
ROUNDING = {"box": 0.1, "score": 1e-4, "box_score": 1e-5, "fraction": 1e-6, "mean_score": 1e-6}


@dataclass
class KitRun:
    kit: str
    run: Path
    export: Path
    images: list[Path]
    params: dict[str, Any]


def _seg(root: Path) -> KitRun:
    from oarkit.seg import prepare_shapes

    data = prepare_shapes(root / "data", num_train=4, num_val=2, size=32)
    run = root / "seg_run"
    assert main(["train", "-c", "seg/pp_liteseg_stdc1_shapes_256x256", f"data.root={data}", f"output_dir={run}",
                 "trainer.max_iters=1", "data.batch_size=2", "data.crop_size=[32,32]", "data.val_resize=null",
                 *QUIET]) == 0
    return KitRun("seg", run, run, sorted((data / "images" / "val").glob("*.jpg")), {})


def _det(root: Path) -> KitRun:
    from oarkit.det import prepare_det_shapes

    data = prepare_det_shapes(root / "data", num_train=4, num_val=2, size=64)
    run = root / "det_run"
    assert main(["train", "-c", "det/ppyoloe_plus_crn_s_shapes_160x160", f"data.root={data}", f"output_dir={run}",
                 "trainer.max_iters=1", "trainer.eval_every_iters=1", "data.batch_size=2", "data.size=[64,64]",
                 "data.multi_scale=[]", "scheduler.warmup_iters=1", *QUIET]) == 0
    # one step leaves every score near the NMS floor: threshold 0 (a request param) keeps the boxes to compare
    return KitRun("det", run, run, sorted((data / "val").glob("*.jpg")), {"threshold": 0.0})


def _ocr_pages(root: Path) -> Path:
    from oarkit.ocr import write_det_set

    return write_det_set(root / "pages", train=2, val=2, size=(160, 160), lines=3, seed=3)


def _ocr_det(root: Path) -> KitRun:
    pages = _ocr_pages(root)
    run = root / "ocr_det_run"
    assert main(["train", "-c", "configs/ocr/ppocrv4_det_mobile_own_data.yaml", f"data.root={pages}",
                 f"output_dir={run}", "data.batch_size=2", "data.num_workers=0", "trainer.target_steps=1",
                 *QUIET]) == 0
    return KitRun("ocr/det", run, run, sorted((pages / "images").glob("val_*.jpg")), {})


def _ocr_rec(root: Path) -> KitRun:
    from oarkit.ocr import write_rec_set

    lines = write_rec_set(root / "lines", train=4, val=2, language="en", seed=5)
    run = root / "ocr_rec_run"
    assert main(["train", "-c", "configs/ocr/ppocrv4_rec_mobile_own_data.yaml", f"data.root={lines}",
                 f"output_dir={run}", "data.batch_size=4", "data.num_workers=0", "data.multi_scale_widths=[]",
                 "data.width=160", "trainer.target_steps=1", *QUIET]) == 0
    # served as OCR serves a rec model: beside the default detector, on whole pages
    return KitRun("ocr/rec", run, run, sorted((_ocr_pages(root) / "images").glob("val_*.jpg")), {})


BUILDERS = {"seg": _seg, "det": _det, "ocr/det": _ocr_det, "ocr/rec": _ocr_rec}


@pytest.fixture(scope="module", params=list(BUILDERS))
def kit_run(request, tmp_path_factory) -> KitRun:
    """One kit's one-step run and its ONNX export (built once per kit)."""
    kit = request.param
    pytest.importorskip(f"oarkit.{kit.split('/')[0]}")
    built = BUILDERS[kit](tmp_path_factory.mktemp(kit.replace("/", "_")))
    out = built.run.parent / "export"
    assert main(["export", str(built.run), "--format", "onnx", "--output-dir", str(out)]) == 0
    built.export = out / "onnx"
    return built


def in_process(kit: str, source: Path, arrays: list[np.ndarray], params: dict[str, Any]) -> list[dict]:
    """The kit predictor's answers on the decoded images, as ``to_dict()``."""
    if kit == "seg":
        from oarkit.seg import Segmenter as predictor
    elif kit == "det":
        from oarkit.det import Detector as predictor
    else:
        from oarkit.ocr import OCR

        predictor = OCR.from_source
    return [r.to_dict() for r in predictor(str(source), **params)(arrays)]


def close(got: Any, want: Any, key: str = "") -> bool:
    """Equal JSON, floats within one step of to_dict()'s rounding (labels, classes, texts, counts exact)."""
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(close(got[k], want[k], k) for k in want)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(close(g, w, key) for g, w in zip(got, want))
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return math.isclose(got, want, rel_tol=1e-5, abs_tol=ROUNDING.get(key, 1e-6) * 1.01)
    return type(got) is type(want) and got == want


def _decoded(files: list[bytes]) -> list[np.ndarray]:
    return [cv2.cvtColor(cv2.imdecode(np.frombuffer(f, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
            for f in files]


def _content(kit: str, results: list[dict]) -> int:
    """How many things the answers hold (classes, detections, lines), so a test never compares empty lists."""
    field = {"seg": "classes", "det": "detections"}.get(kit, "lines")
    return sum(len(r[field]) for r in results)


@pytest.mark.parametrize("form", ["run", "export"])
def test_served_kit_answers_what_its_predictor_answers(kit_run, form):
    source = kit_run.run if form == "run" else kit_run.export
    files = [path.read_bytes() for path in kit_run.images]
    want = in_process(kit_run.kit, source, _decoded(files), kit_run.params)
    assert _content(kit_run.kit, want) > 0, want
    with TestClient(create_app(ServeConfig(sources=(str(source),), name="m"), background_load=False)) as client:
        (entry,) = client.get("/v1/models").json()["models"]
        assert entry["task"] == kit_run.kit and entry["format"] == ("pytorch" if form == "run" else "onnx")
        if form == "run":  # a multipart form, params as form fields
            answer = client.post("/v1/models/m/predict", data={k: str(v) for k, v in kit_run.params.items()},
                                 files=[("file", (p.name, f, "image/jpeg")) for p, f in zip(kit_run.images, files)])
        else:  # JSON, base64 images
            answer = client.post("/v1/models/m/predict", json={
                "inputs": [{"image": base64.b64encode(f).decode()} for f in files], "params": kit_run.params})
    assert answer.status_code == 200, answer.text
    got = answer.json()["results"]
    assert close(got, want), (got, want)


PADDLEX = {"seg": "/semantic-segmentation", "det": "/object-detection", "ocr/det": "/ocr", "ocr/rec": "/ocr"}


def _paddlex_want(kit: str, result: Any) -> dict[str, Any]:
    """What PaddleX's route answers for one of the kit predictor's results (PaddleX's own field names)."""
    if kit == "seg":
        return {"labelMap": result.label_map.reshape(-1).tolist(), "size": list(result.label_map.shape)}
    if kit == "det":
        return {"detectedObjects": [{"bbox": [float(v) for v in b], "categoryId": int(c), "categoryName": n,
                                     "score": float(s)}
                                    for b, s, c, n in zip(result.boxes, result.scores, result.class_ids,
                                                          result.labels)]}
    return {"rec_texts": [line.text for line in result.lines]}


def test_paddlex_route_answers_what_its_predictor_answers(kit_run):
    image = kit_run.images[0]
    file = image.read_bytes()
    if kit_run.kit == "seg":
        from oarkit.seg import Segmenter as predictor
    elif kit_run.kit == "det":
        from oarkit.det import Detector as predictor
    else:
        from oarkit.ocr import OCR

        predictor = OCR.from_source
    want = _paddlex_want(kit_run.kit, predictor(str(kit_run.run), **kit_run.params)(_decoded([file]))[0])
    field = "file" if kit_run.kit.startswith("ocr") else "image"
    with TestClient(create_app(ServeConfig(sources=(str(kit_run.run),), name="m"), background_load=False)) as client:
        answer = client.post(PADDLEX[kit_run.kit], json={field: base64.b64encode(file).decode(), **kit_run.params})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["errorCode"] == 0 and body["errorMsg"] == "Success"
    got = body["result"]
    if kit_run.kit.startswith("ocr"):
        got = {"rec_texts": got["ocrResults"][0]["prunedResult"]["rec_texts"]}
        assert want["rec_texts"], want
    assert close(got, want), (got, want)


@pytest.fixture(scope="module")
def ocr_sources(tmp_path_factory) -> dict[str, str]:
    """The text-orientation classifier as a registry name and as an ONNX export, and an exported ONNX det -> cls
    -> rec pipeline folder (PaddleOCR's released weights, which ship offline)."""
    pytest.importorskip("oarkit.ocr")
    from oarkit.ocr import export_pipeline

    root = tmp_path_factory.mktemp("ocr_sources")
    assert main(["export", "ocr/cls_mv3_mobile", "--format", "onnx", "--output-dir", str(root / "cls")]) == 0
    folder, _ = export_pipeline(root / "pipeline", det="ocr/ppocrv4_det_mobile", rec="ocr/ppocrv4_rec_mobile",
                                cls="ocr/cls_mv3_mobile", det_example=(160, 160), verify=False)
    return {"registry": "ocr/cls_mv3_mobile", "export": str(root / "cls" / "onnx"), "pipeline": str(folder)}


@pytest.mark.parametrize("form", ["registry", "export", "pipeline"])
def test_ocr_cls_and_an_exported_pipeline_serve_as_ocr_reads(ocr_sources, form, tmp_path):
    from oarkit.ocr import OCR

    source = ocr_sources[form]
    files = [p.read_bytes() for p in sorted((_ocr_pages(tmp_path) / "images").glob("val_*.jpg"))]
    want = [r.to_dict() for r in OCR.from_source(source)(_decoded(files))]
    assert _content("ocr", want) > 0, want
    with TestClient(create_app(ServeConfig(sources=(source,), name="m"), background_load=False)) as client:
        (entry,) = client.get("/v1/models").json()["models"]
        answer = client.post("/v1/models/m/predict", files=[("file", (f"{i}.jpg", f, "image/jpeg"))
                                                             for i, f in enumerate(files)])
    assert entry["task"] == ("ocr" if form == "pipeline" else "ocr/cls")
    assert entry["format"] == {"registry": "pytorch", "export": "onnx", "pipeline": "pipeline"}[form]
    assert answer.status_code == 200, answer.text
    assert close(answer.json()["results"], want), (answer.json()["results"], want)
