"""The OCR pipeline in the browser (``oarkit export ocr --format web``).

Two levels: the kit's JavaScript operations under node against OpenCV and the Python post-processing they port
(contours, minimum-area boxes, box scores, unclip, resize, perspective crops, CTC decoding), then the exported page
in headless Chromium against ``OCR`` on the same pipeline folder (same ONNX files) on rendered pages.
``OARKIT_WEB_SCREENSHOTS=docs/images`` writes the page's screenshot where the docs show it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from oarkit.ocr.charset import CharDictionary
from oarkit.ocr.pipeline.crops import crop_box, reading_order
from oarkit.ocr.postprocess.ctc import ctc_greedy_decode
from oarkit.ocr.postprocess.db import DBPostProcess, filter_boxes

WEB_DIR = Path(__file__).resolve().parents[2] / "ocr" / "web"
OPS = Path(__file__).resolve().parent / "web_ops.mjs"


def _clipper() -> Path:
    from oarkit.core.export.web.runtime import npm_file

    return npm_file("clipper-lib", "clipper.js")


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the JavaScript operations are checked under node)")
    return node


def _run_ops(tmp_path: Path, cases: list[dict]) -> list:
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run([_node(), str(OPS), str(tmp_path / "cases.json"), str(_clipper()), str(WEB_DIR)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _prob_maps(rng: np.random.Generator) -> list[np.ndarray]:
    """DB-like probability maps: rotated text bars, a ring (its hole is a contour of its own), blobs cut by the
    border, specks too small to keep, and a smooth fall-off so that box scores vary."""
    maps = []
    for k in range(4):
        h, w = (96, 160) if k % 2 else (128, 128)
        prob = np.zeros((h, w), np.float32)
        for _ in range(6):
            centre = (float(rng.uniform(0, w)), float(rng.uniform(0, h)))
            size = (float(rng.uniform(6, 60)), float(rng.uniform(3, 14)))
            corners = cv2.boxPoints((centre, size, float(rng.uniform(-30, 30))))
            cv2.fillPoly(prob, [np.round(corners).astype(np.int32)], float(rng.uniform(0.5, 1.0)))
        cv2.circle(prob, (int(w * 0.7), int(h * 0.6)), 12, 0.9, 4)
        prob[rng.integers(0, h, 5), rng.integers(0, w, 5)] = 0.8
        prob = cv2.GaussianBlur(prob, (5, 5), 1.2)
        prob += rng.uniform(0, 0.05, prob.shape).astype(np.float32)
        maps.append(np.clip(prob, 0, 1).astype(np.float32))
    return maps


def test_db_postprocess_in_js_matches_opencv_and_python(tmp_path):
    rng = np.random.default_rng(0)
    db = DBPostProcess(thresh=0.3, box_thresh=0.5, unclip_ratio=1.5)
    cases, expected, holes = [], [], 0
    for k, prob in enumerate(_prob_maps(rng)):
        file = tmp_path / f"prob{k}.f32"
        prob.tofile(file)
        source = (prob.shape[0] * 3, prob.shape[1] * 3 - 7)  # boxes scaled to a larger, other-ratio image
        cases.append({"op": "db", "file": str(file), "h": prob.shape[0], "w": prob.shape[1], "db": db.to_dict(),
                      "source": list(source)})
        contours, _ = cv2.findContours((prob > db.thresh).astype(np.uint8) * 255, cv2.RETR_LIST,
                                       cv2.CHAIN_APPROX_SIMPLE)
        _, hierarchy = cv2.findContours((prob > db.thresh).astype(np.uint8), cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
        holes += int((hierarchy[0, :, 3] >= 0).sum()) if hierarchy is not None else 0
        boxes, scores = filter_boxes(*db(prob, source), source)
        order = reading_order(boxes)
        expected.append((contours, boxes[order] if len(order) else boxes, scores[order] if len(order) else scores))
    results = _run_ops(tmp_path, cases)
    errors: list[float] = []
    exact = 0
    for got, (contours, boxes, scores) in zip(results, expected):
        # the same borders, outer and hole ones (each as its set of turning points), as cv2.findContours
        def key(points: list) -> tuple:
            return tuple(sorted(map(tuple, points)))
        assert sorted(key(c) for c in got["contours"]) == sorted(key(c.reshape(-1, 2).tolist()) for c in contours)
        # the same boxes; where cv2's float32 box corners fall a hair under an integer (12.999999 for 13), pyclipper's
        # truncation moves an unclipped corner by a pixel, which the 3x scaling makes up to 3 pixels
        assert len(got["boxes"]) == len(boxes)
        for mine, theirs in zip(got["boxes"], np.asarray(boxes).tolist()):
            exact += mine == theirs
            assert np.abs(np.asarray(mine) - np.asarray(theirs)).max() <= 3
        # equal to float32 rounding, but where a box moved by a pixel or reaches past the map's border (OpenCV
        # clips the polygon's edge lines to the mask in its own way): there a few pixels of the box differ
        errors.extend(np.abs(np.asarray(got["scores"]) - scores).tolist())
    total = sum(len(r["boxes"]) for r in results)
    assert total >= 12 and exact >= 0.8 * total  # the maps gave boxes to compare, nearly all equal to the pixel
    assert max(errors) < 0.03 and np.mean(np.asarray(errors) < 1e-6) >= 0.75
    assert holes >= 2  # hole borders (the rings') were traced and compared too


def test_resize_crop_and_ctc_in_js_match_python(tmp_path):
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (83, 131, 3), dtype=np.uint8)
    image = cv2.GaussianBlur(image, (3, 3), 0)  # smooth enough for cubic interpolation to matter
    image.tofile(tmp_path / "image.rgb")
    sizes = [(48, 200), (48, 37), (160, 96), (32, 131), (83, 64)]
    boxes = [np.float32([[10, 12], [90, 18], [88, 40], [8, 34]]), np.float32([[40, 5], [60, 5], [60, 70], [40, 70]]),
             np.float32([[3, 60], [120, 50], [125, 75], [5, 82]])]
    cases = [{"op": "resize", "file": str(tmp_path / "image.rgb"), "h": 83, "w": 131, "to": list(s)} for s in sizes]
    cases += [{"op": "crop", "file": str(tmp_path / "image.rgb"), "h": 83, "w": 131, "box": b.tolist()} for b in boxes]
    dictionary = CharDictionary(list("abcdefghij"), use_space_char=True)
    probs = rng.dirichlet(np.full(dictionary.num_classes, 0.2), size=(3, 40)).astype(np.float32)
    for b in range(3):
        probs[b].tofile(tmp_path / f"ctc{b}.f32")
        cases.append({"op": "ctc", "file": str(tmp_path / f"ctc{b}.f32"), "steps": 40,
                      "classes": dictionary.num_classes, "characters": dictionary.characters})
    results = _run_ops(tmp_path, cases)
    for size, got in zip(sizes, results[:len(sizes)]):
        assert np.array_equal(np.asarray(got, np.uint8).reshape(*size, 3), cv2.resize(image, size[::-1]))
    for box, got in zip(boxes, results[len(sizes):len(sizes) + len(boxes)]):
        want = crop_box(image, box)
        assert (got["height"], got["width"]) == want.shape[:2]  # the tall box is turned as Python turns it
        diff = np.abs(np.asarray(got["data"], np.int16).reshape(want.shape) - want.astype(np.int16))
        assert diff.max() <= 1 and (diff > 0).mean() < 0.01
    for got, want in zip(results[-3:], ctc_greedy_decode(probs, dictionary)):
        assert got["text"] == want.text and got["text"]
        assert got["score"] == pytest.approx(want.score, abs=1e-7)


# -- the exported page in headless Chromium ----------------------------------------------------------------------------
#: where the page's screenshot goes: ``$OARKIT_WEB_SCREENSHOTS`` (``docs/images`` refreshes the docs' picture), else
#: the session's temporary folder, so that a test run leaves the checkout as it was
SCREENSHOTS_ENV = "OARKIT_WEB_SCREENSHOTS"


@pytest.fixture(scope="module")
def ocr_web(tmp_path_factory) -> tuple[Path, Path, dict[str, Path]]:
    """The default ``OCR()`` pipeline (PP-OCRv6 small det + rec) exported to ONNX (unverified, to keep the test
    short: the export tests verify it) and to a web folder, with rendered pages inside the folder to serve."""
    from oarkit.ocr import export_pipeline, render_page
    from oarkit.ocr.pipeline.ocr import DEFAULT_DET, DEFAULT_REC
    from oarkit.ocr.web_export import web_export

    root = tmp_path_factory.mktemp("ocr_web")
    folder, _ = export_pipeline(root / "pipeline", det=DEFAULT_DET, rec=DEFAULT_REC, verify=False)
    web = web_export(folder, out=root / "web")
    pages = {"en": render_page(7, size=(480, 640), language="en", seed=11).image,
             "mixed": render_page(6, size=(560, 720), language="mixed", seed=12, angle=3.0).image}
    files = {}
    for name, image in pages.items():
        files[name] = web / f"{name}.png"
        cv2.imwrite(str(files[name]), cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR))
    return folder, web, files


def test_web_folder_layout(ocr_web):
    _, web, _ = ocr_web
    deploy = json.loads((web / "deploy.json").read_text())
    assert deploy["task"] == "ocr" and sorted(deploy["models"]) == ["det", "rec"]
    assert deploy["ocr"]["stages"]["det"]["db"]["thresh"] == 0.2  # PP-OCRv6's published DB settings
    assert deploy["ocr"]["parameters"] == {"drop_score": 0.5, "rec_batch_size": 6}
    characters = (web / "dict.txt").read_text(encoding="utf-8").split("\n")
    assert len(characters) + 1 == deploy["ocr"]["num_classes"] and characters[-1] == " "
    for name in ("kit.js", "ocr_db.js", "ocr_image.js", "vendor/clipper.js", "models/det.onnx", "models/rec.onnx"):
        assert (web / name).is_file(), name


def test_cli_exports_a_pipeline_folder_to_web(ocr_web, tmp_path, caplog):
    from oarkit.core.cli import main

    folder, _, _ = ocr_web
    assert main(["export", str(folder), "--format", "web", "--out", str(tmp_path / "web"), "--quantize", "int8"]) == 0
    deploy = json.loads((tmp_path / "web" / "deploy.json").read_text())
    # a float folder has no int8 artifacts beside its stages: they stay float, and the export says so
    assert deploy["ocr"]["formats"] == {"det": "onnx", "rec": "onnx"}
    assert "stays float" in caplog.text
    assert deploy["title"] == "oarkit OCR · PP-OCRv6-small"


def test_web_ocr_matches_python(ocr_web, web_server, open_web_page, tmp_path_factory):
    from oarkit.ocr import OCR, character_error_rate

    folder, web, files = ocr_web
    page = open_web_page(web_server(web) + "index.html", viewport=(1500, 900), timeout_s=120)
    page.ready()
    ocr = OCR(folder)
    for name, file in files.items():
        want = ocr(cv2.cvtColor(cv2.imread(str(file)), cv2.COLOR_BGR2RGB)).to_dict()
        got = page.predict(file.name)
        assert want["text"] and character_error_rate([got["text"]], [want["text"]]) <= 0.005, (name, got, want)
        assert len(got["lines"]) == len(want["lines"])
        for mine, theirs in zip(got["lines"], want["lines"]):
            assert np.abs(np.asarray(mine["box"]) - np.asarray(theirs["box"])).max() <= 1
            assert mine["score"] == pytest.approx(theirs["score"], abs=1e-3)
            assert mine["box_score"] == pytest.approx(theirs["box_score"], abs=1e-3)
        assert set(got) == set(want)  # the keys of OCRResult.to_dict()
    by_url = page.predict(files["en"].name)
    for kind in ("blob", "img"):  # a Blob and an HTMLImageElement read the same
        assert page.predict(files["en"].name, kind=kind) == by_url, kind
    strict = OCR(folder, drop_score=0.999)(cv2.cvtColor(cv2.imread(str(files["en"])), cv2.COLOR_BGR2RGB)).to_dict()
    assert page.predict(files["en"].name, options={"drop_score": 0.999})["text"] == strict["text"]  # OCR()'s option
    # the picture a person sees, after picking a file through the page's input
    page.page.set_input_files("#file", str(files["en"]))
    page.page.wait_for_selector("#view:not([hidden]) #picture canvas")
    page.page.wait_for_function("document.querySelector('#latency').textContent.includes('ms')")
    shot = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path_factory.mktemp("screenshots")) / "web_ocr.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert page.foreign_requests() == [] and not page.errors


def test_web_ocr_with_orientation_stage(ocr_web, tmp_path, web_server, open_web_page):
    """A det → cls → rec folder: the page turns the lines of an upside-down page as ``OCR(folder)`` does."""
    from oarkit.core.deploy.pipeline import write_pipeline
    from oarkit.core.export import export
    from oarkit.ocr import OCR, export_source
    from oarkit.ocr.web_export import web_export

    folder, _, files = ocr_web
    pipeline = tmp_path / "pipeline"
    shutil.copytree(folder, pipeline)
    export(export_source("ocr/cls_mv3_mobile"), "onnx", output_dir=pipeline / "cls", verify=False)
    write_pipeline(pipeline, glue="ocr/det_cls_rec", stages={"det": "det/onnx", "cls": "cls/onnx", "rec": "rec/onnx"},
                   task="ocr")
    web = web_export(pipeline, out=tmp_path / "web")
    upside_down = np.ascontiguousarray(cv2.imread(str(files["en"]))[::-1, ::-1])
    cv2.imwrite(str(web / "upside_down.png"), upside_down)
    want = OCR(pipeline)(cv2.cvtColor(upside_down, cv2.COLOR_BGR2RGB)).to_dict()
    page = open_web_page(web_server(web) + "index.html", timeout_s=120)
    got = page.predict("upside_down.png")
    assert want["text"] and got["text"] == want["text"]
    for mine, theirs in zip(got["lines"], want["lines"]):
        assert np.abs(np.asarray(mine["box"]) - np.asarray(theirs["box"])).max() <= 1
        assert mine["score"] == pytest.approx(theirs["score"], abs=1e-3)
    assert page.foreign_requests() == [] and not page.errors
