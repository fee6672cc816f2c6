"""``oarkit export --format web`` for clas, seg and det, driven in a headless Chromium: the page's ``predict``
against the Python predictors on the same images (every input kind the page API takes), no request off
127.0.0.1, an image set through the file input and the page screenshotted (web_clas/seg/det.png); the error of a
missing npm cache and of a task without a web export.

``OARKIT_WEB_SCREENSHOTS=docs/images`` writes the screenshots where the docs show them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from oarkit.core.cli import main

#: where the page screenshots go: ``$OARKIT_WEB_SCREENSHOTS`` (``docs/images`` refreshes the docs' pictures), else a
#: folder of the session's own, so that a test run leaves the checkout as it was
SCREENSHOTS_ENV = "OARKIT_WEB_SCREENSHOTS"


def _png(array: np.ndarray, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)
    return path


def _export_web(source: Path | str, out: Path, *extra: str) -> Path:
    assert main(["export", str(source), "--format", "web", "--out", str(out), *extra]) == 0
    for name in ("index.html", "oarkit.js", "kit.js", "deploy.json", "models/model.onnx",
                 "ort/ort.wasm.min.mjs", "ort/ort-wasm-simd-threaded.wasm"):
        assert (out / name).is_file(), name
    return out


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory) -> Path:
    return Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path_factory.mktemp("screenshots"))


def _screenshot(page, image: Path, folder: Path, name: str) -> Path:
    """Set ``image`` through the page's file input, wait for its picture and save a screenshot of the page."""
    page.page.set_input_files("#file", str(image))
    page.page.wait_for_selector("#view:not([hidden]) #picture > *")
    page.page.wait_for_function("document.querySelector('#latency').textContent.includes('ms')")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.page.screenshot(path=str(path), full_page=True)
    return path


def _without_source(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "source"}


# ----------------------------------------------------------------------------- clas
@pytest.fixture(scope="module")
def clas_web(colour_clas_run, tmp_path_factory) -> Path:
    return _export_web(colour_clas_run, tmp_path_factory.mktemp("web") / "clas")


def test_clas_web_matches_the_classifier(clas_web, colour_clas_run, colour_clas_root, web_server, open_web_page,
                                         screenshots):
    from oarkit.clas import Classifier

    deploy = json.loads((clas_web / "deploy.json").read_text())
    assert deploy["task"] == "clas" and deploy["models"]["model"]["file"] == "models/model.onnx"
    assert deploy["models"]["model"]["labels"] == ["blue", "green", "red"]
    images = sorted((colour_clas_root / "val").rglob("*.png"))[:3]
    rng = np.random.default_rng(0)  # a larger, non-square picture: the short-side resize and the crop do work
    images.append(_png(rng.integers(0, 256, (45, 61, 3), dtype=np.uint8), clas_web / "test" / "noise.png"))
    for i, image in enumerate(images[:3]):
        shutil.copyfile(image, clas_web / "test" / f"{i}.png")
    names = [f"test/{i}.png" for i in range(3)] + ["test/noise.png"]
    classifier = Classifier(colour_clas_run, topk=5)
    url = web_server(clas_web)
    page = open_web_page(url)
    for name, kind in zip(names, ["url", "blob", "img", "imagedata"]):
        wanted = classifier(np.asarray(Image.open(clas_web / name).convert("RGB"))).to_dict()
        got = page.predict(url + name, kind=kind)
        assert list(got) == list(wanted) and got["source"] is None
        assert [t["label"] for t in got["topk"]] == [t["label"] for t in wanted["topk"]], (name, got, wanted)
        assert [t["class_id"] for t in got["topk"]] == [t["class_id"] for t in wanted["topk"]]
        assert got["label"] == wanted["label"] and abs(got["score"] - wanted["score"]) <= 1e-3
        assert max(abs(a["score"] - b["score"]) for a, b in zip(got["topk"], wanted["topk"])) <= 1e-3
    assert page.predict(url + names[0], kind="bitmap", options={"topk": 2})["topk"].__len__() == 2
    shot = _screenshot(page, clas_web / "test" / "0.png", screenshots, "web_clas.png")
    assert shot.stat().st_size > 10_000
    assert page.evaluate("() => window.oarkit.threads") == 1  # not cross-origin isolated: one thread
    assert not page.foreign_requests(), page.foreign_requests()
    assert any(u.endswith("/ort/ort-wasm-simd-threaded.wasm") for u in page.requests)
    assert not page.errors, page.errors


def test_clas_web_threads_when_cross_origin_isolated(clas_web, web_server, open_web_page):
    _png(np.full((32, 32, 3), (200, 30, 30), np.uint8), clas_web / "threads" / "red.png")  # its own picture
    url = web_server(clas_web, isolated=True)
    page = open_web_page(url + "?threads=2")
    page.ready()
    assert page.evaluate("() => [window.crossOriginIsolated, window.oarkit.threads]") == [True, 2]
    assert page.predict(f"{url}threads/red.png")["label"] in ("blue", "green", "red")
    assert not page.foreign_requests() and not page.errors, page.errors


@pytest.mark.slow  # a second, calibrated export: about 15 s on two idle cores
def test_clas_web_int8(colour_clas_run, tmp_path, web_server, open_web_page):
    from oarkit.clas import Classifier

    web = _export_web(colour_clas_run, tmp_path / "clas_int8", "--quantize", "int8")
    deploy = json.loads((web / "deploy.json").read_text())["models"]["model"]
    assert deploy["format"] == "onnx_int8" and deploy["quantization"]
    classifier = Classifier(_onnx_folder(web, tmp_path / "onnx_int8"))
    array = np.random.default_rng(1).integers(0, 256, (40, 52, 3), dtype=np.uint8)
    _png(array, web / "test" / "noise.png")
    url = web_server(web)
    got = open_web_page(url).predict(url + "test/noise.png")
    wanted = classifier(array).to_dict()
    assert got["label"] == wanted["label"] and abs(got["score"] - wanted["score"]) <= 1e-2, (got, wanted)


# ----------------------------------------------------------------------------- seg and det: the Python predictor
def _onnx_folder(web: Path, out: Path) -> Path:
    """The export folder (model.onnx + deploy.yaml) that a web folder carries, rebuilt from its deploy.json: the
    Python predictors run it as they run any ONNX export, so both sides see the same model."""
    import yaml

    deploy = dict(json.loads((web / "deploy.json").read_text())["models"]["model"])
    deploy.pop("file")
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(web / "models" / "model.onnx", out / deploy["artifact"])
    (out / "deploy.yaml").write_text(yaml.safe_dump(deploy, sort_keys=False))
    return out


def _test_images(source_images: list[Path], folder: Path, sizes: list[tuple[int, int]]) -> list[str]:
    """The images re-encoded as PNG (no JPEG decoder difference between PIL and Chromium) under ``folder/test``,
    plus the first resized to each of ``sizes`` (so the resizes do work); their names relative to ``folder``."""
    names = []
    for i, image in enumerate(source_images):
        array = np.asarray(Image.open(image).convert("RGB"))
        names.append(_png(array, folder / "test" / f"{i}.png").relative_to(folder).as_posix())
    first = Image.open(source_images[0]).convert("RGB")
    for h, w in sizes:
        array = np.asarray(first.resize((w, h), Image.BILINEAR))
        names.append(_png(array, folder / "test" / f"{h}x{w}.png").relative_to(folder).as_posix())
    return names


# ----------------------------------------------------------------------------- seg
@pytest.fixture(scope="module")
def seg_run(tmp_path_factory) -> tuple[Path, Path]:
    """PP-LiteSeg STDC1 trained four iterations on 64x64 shapes at 32x32 crops (scales [0.5] at inference), and its
    dataset root."""
    from oarkit.seg import prepare_shapes

    root = prepare_shapes(tmp_path_factory.mktemp("shapes"), num_train=16, num_val=6, size=64)
    out = tmp_path_factory.mktemp("seg") / "run"
    assert main(["train", "-c", "seg/pp_liteseg_stdc1_shapes_256x256", f"data.root={root}", f"output_dir={out}",
                 "trainer.max_iters=4", "data.batch_size=4", "data.crop_size=[32,32]", "trainer.progress=false",
                 "trainer.tensorboard=false", "trainer.precision=fp32"]) == 0
    return out, root


def test_seg_web_matches_the_segmenter(seg_run, tmp_path, web_server, open_web_page, screenshots):
    from oarkit.seg import Segmenter

    run, root = seg_run
    web = _export_web(run, tmp_path / "seg_web")
    segmenter = Segmenter(_onnx_folder(web, tmp_path / "onnx"))
    sources = sorted(root.rglob("images/val/*.jpg"))[:2]
    names = _test_images(sources, web, [(48, 80)])
    url = web_server(web)
    page = open_web_page(url)
    for name, kind in zip(names, ["url", "blob", "img"]):
        result = segmenter(np.asarray(Image.open(web / name).convert("RGB")))
        wanted = result.to_dict()
        got = page.predict(url + name, kind=kind)
        debug = page.evaluate("() => window.oarkit.debug()")
        mask = np.asarray(debug["mask"]).reshape(debug["size"])
        assert got["size"] == wanted["size"] == list(mask.shape)
        assert (mask == result.label_map).mean() >= 0.999, (name, (mask == result.label_map).mean())
        assert list(got) == list(wanted) and [list(c) for c in got["classes"]] == [list(c) for c in wanted["classes"]]
        by_id = {c["class_id"]: c for c in got["classes"]}
        for entry in wanted["classes"]:
            if entry["fraction"] > 0.01:
                assert by_id[entry["class_id"]]["label"] == entry["label"]
                assert abs(by_id[entry["class_id"]]["fraction"] - entry["fraction"]) <= 1e-3
                assert abs(by_id[entry["class_id"]]["mean_score"] - entry["mean_score"]) <= 1e-3
    shot = _screenshot(page, web / names[0], screenshots, "web_seg.png")
    assert shot.stat().st_size > 10_000
    assert not page.foreign_requests(), page.foreign_requests()
    assert not page.errors, page.errors


# ----------------------------------------------------------------------------- det
@pytest.fixture(scope="module")
def det_run(tmp_path_factory) -> tuple[Path, Path]:
    """PP-YOLOE+-s trained three iterations on 64x64 shapes, and its dataset root."""
    from oarkit.det import prepare_det_shapes

    root = prepare_det_shapes(tmp_path_factory.mktemp("det_shapes"), num_train=12, num_val=6, size=64)
    out = tmp_path_factory.mktemp("det") / "run"
    assert main(["train", "-c", "det/ppyoloe_plus_crn_s_shapes_160x160", f"data.root={root}", f"output_dir={out}",
                 "trainer.max_iters=3", "trainer.eval_every_iters=3", "data.batch_size=4", "data.size=[64,64]",
                 "data.multi_scale=[]", "scheduler.warmup_iters=1", "trainer.progress=false",
                 "trainer.tensorboard=false"]) == 0
    return out, root


def _rows(record: dict) -> dict[str, torch.Tensor]:
    dets = record["detections"]
    return {"boxes": torch.tensor([d["box"] for d in dets], dtype=torch.float32).reshape(-1, 4),
            "scores": torch.tensor([d["score"] for d in dets], dtype=torch.float32),
            "labels": torch.tensor([d["class_id"] for d in dets], dtype=torch.long)}


def test_det_web_matches_the_detector(det_run, tmp_path, web_server, open_web_page, screenshots):
    from oarkit.core.export import MatchedBoxes
    from oarkit.det import Detector

    run, root = det_run
    web = _export_web(run, tmp_path / "det_web")
    assert json.loads((web / "deploy.json").read_text())["threshold"] == 0.5
    folder = _onnx_folder(web, tmp_path / "onnx")
    names = _test_images(sorted((root / "val").glob("*.jpg"))[:2], web, [(90, 120)])
    url = web_server(web)
    page = open_web_page(url)
    # a model trained three iterations scores low: judge every detection the NMS keeps above a low cut
    cut = 0.01
    detector = Detector(folder, threshold=cut)
    matcher = MatchedBoxes("boxes", scores="scores", labels="labels", min_iou=0.5, min_side=1.0)
    judged = 0
    for name, kind in zip(names, ["url", "blob", "img"]):
        wanted = detector(np.asarray(Image.open(web / name).convert("RGB"))).to_dict()
        got = page.predict(url + name, kind=kind, options={"threshold": cut})
        assert list(got) == list(wanted) and got["size"] == wanted["size"]
        assert all(list(d) == ["box", "score", "class_id", "label"] for d in got["detections"])
        diffs = matcher(_rows(wanted), _rows(got))
        assert diffs["boxes"].error <= 0.01, (name, diffs["boxes"])
        assert diffs["scores"].error <= 1e-3 and diffs["labels"].error == 0, diffs
        judged += len(wanted["detections"])
    assert judged > 0, "no detection above the cut: the comparison judged nothing"
    default = page.predict(url + names[0])  # the deploy.json threshold, as Detector(threshold=0.5)
    assert len(default["detections"]) == len(Detector(folder)(str(web / names[0])).to_dict()["detections"])
    # the picture: the page's own threshold from its URL, low enough to show this barely trained model's best boxes
    scores = sorted((d["score"] for d in detector(str(web / names[2])).to_dict()["detections"]), reverse=True)
    shown = open_web_page(f"{url}?threshold={scores[min(4, len(scores) - 1)]:.4f}")
    shot = _screenshot(shown, web / names[2], screenshots, "web_det.png")
    assert shown.evaluate("() => window.oarkit.last.result.detections.length") >= 1
    assert shot.stat().st_size > 10_000
    assert not page.foreign_requests() and not shown.foreign_requests(), page.foreign_requests()
    assert not page.errors and not shown.errors, page.errors + shown.errors


# ----------------------------------------------------------------------------- errors
def test_web_export_without_the_npm_cache_names_the_command(colour_clas_run, tmp_path, monkeypatch, capsys):
    from oarkit.core.errors import OarkitError
    from oarkit.core.export.web import web_runtime_dir

    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "empty"))
    with pytest.raises(OarkitError, match=r"make web-deps.*npm install --prefix .*onnxruntime-web@1\.30\.0"):
        web_runtime_dir()
    assert main(["export", str(colour_clas_run), "--format", "web", "--out", str(tmp_path / "web")]) == 2
    assert "make web-deps" in capsys.readouterr().err
    assert not (tmp_path / "web").exists()  # it fails before exporting anything


def test_web_format_on_a_task_without_web_export(tmp_path, capsys):
    assert main(["export", "nlp/ernie_3_0_medium_zh", "--format", "web", "--random-weights"]) == 2
    err = capsys.readouterr().err
    assert "cannot be exported to the web" in err and "clas" in err and "det" in err and "seg" in err
    assert main(["export", "clas/pp_lcnet_x0_25", "--format", "web,onnx"]) == 2
    assert "cannot be combined" in capsys.readouterr().err
    assert main(["export", "--list-formats"]) == 0
    assert any(line.startswith("web ") for line in capsys.readouterr().out.splitlines())


def test_write_web_folder_carries_several_models_and_extra_files(tmp_path):
    from oarkit.core.errors import OarkitError
    from oarkit.core.export.web import PAGE_FILES, write_web_folder

    files = {name: tmp_path / "in" / name for name in ("det.onnx", "rec.onnx", "kit.mjs", "clipper.js", "keys.txt")}
    for name, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
    out = write_web_folder(tmp_path / "web", task_id="ocr", kit_script=files["kit.mjs"],
                           models={"det": files["det.onnx"], "rec": files["rec.onnx"]},
                           deploy={"models": {"det": {"labels": []}, "rec": {"preprocessing": {"height": 48}}},
                                   "pipeline": ["det", "rec"]},
                           title="OCR", extra_files={"vendor/clipper.js": files["clipper.js"],
                                                     "dict.txt": files["keys.txt"]})
    deploy = json.loads((out / "deploy.json").read_text())
    assert list(deploy)[:3] == ["task", "title", "models"] and deploy["task"] == "ocr" and deploy["title"] == "OCR"
    assert deploy["models"] == {"det": {"file": "models/det.onnx", "labels": []},
                                "rec": {"file": "models/rec.onnx", "preprocessing": {"height": 48}}}
    assert deploy["pipeline"] == ["det", "rec"] and deploy["runtime"] == {"onnxruntime-web": "1.30.0"}
    assert (out / "models" / "rec.onnx").read_text() == "rec.onnx" and (out / "kit.js").read_text() == "kit.mjs"
    assert (out / "vendor" / "clipper.js").read_text() == "clipper.js" and (out / "dict.txt").read_text() == "keys.txt"
    assert all((out / name).is_file() for name in PAGE_FILES)
    for bad in ("../x.js", "/etc/x", "kit.js", "ort/x.js"):
        with pytest.raises(OarkitError, match="extra file name"):
            write_web_folder(tmp_path / "bad", task_id="ocr", kit_script=files["kit.mjs"],
                             models={"det": files["det.onnx"]}, deploy={}, title="x",
                             extra_files={bad: files["keys.txt"]})
    with pytest.raises(OarkitError, match="not among the models"):
        write_web_folder(tmp_path / "bad", task_id="ocr", kit_script=files["kit.mjs"], models={},
                         deploy={"models": {"det": {}}}, title="x")


def test_ort_web_version_matches_the_makefile():
    import re

    from oarkit.core.export.web import ORT_WEB_VERSION

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert re.search(r"^ORT_WEB_VERSION\s*:?=\s*(\S+)", makefile, re.M).group(1) == ORT_WEB_VERSION
