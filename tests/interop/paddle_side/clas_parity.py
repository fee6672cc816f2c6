"""Paddle side of the clas parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddleclas 2.6.0).

For each PaddleClas model named on the command line: build it with random weights, perturb every BatchNorm
statistic and every constant-valued tensor (so that the output depends on every layer and a wrongly mapped or
forgotten tensor shows), save ``<name>/model.pdparams``, run Paddle's eval forward on a fixed input and save the
input and output (``input.npy``, ``output.npy``). With ``--inference NAME`` the same weights are also exported with
``paddle.jit.save`` (Paddle 3: ``inference.json`` + ``inference.pdiparams``) and run by Paddle Inference
(``inference_output.npy``). Paddle 3 no longer writes ``inference.pdiparams.info`` (and its legacy-program mode
fails to trace ``paddle.multiply`` in 3.3.1), so the script writes one as older Paddle releases did: a pickle of
``{static name: {"structured_name": name}}``.

    .venv-paddle/bin/python tests/interop/paddle_side/clas_parity.py OUT_DIR PPLCNet_x1_0 ResNet50_vd \\
        PPHGNetV2_B0 --inference PPLCNet_x1_0
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import pickle
import sys
from pathlib import Path

import numpy as np
import paddle

# PaddleClas's wheel installs its package as paddleclas/ppcls, whose modules import ``ppcls``; importing the
# backbone directly avoids paddleclas/__init__.py (its inference front end pulls in cv2, faiss, ...).
sys.path.insert(0, importlib.util.find_spec("paddleclas").submodule_search_locations[0])
from ppcls.utils import logger as ppcls_logger  # noqa: E402

ppcls_logger.init_logger()  # ResNet's constructor logs a deprecation warning through it

_LEGENDARY = "ppcls.arch.backbone.legendary_models."
MODELS = {
    "PPLCNet_x1_0": _LEGENDARY + "pp_lcnet",
    "ResNet50_vd": _LEGENDARY + "resnet",
    "ResNet18_vd": _LEGENDARY + "resnet",
    "PPLCNetV2_small": _LEGENDARY + "pp_lcnet_v2",
    "PPHGNet_tiny": _LEGENDARY + "pp_hgnet",
    "PPHGNetV2_B0": _LEGENDARY + "pp_hgnet_v2",
    "MobileNetV3_small_x0_35": _LEGENDARY + "mobilenet_v3",
    "MobileNetV3_large_x0_35": _LEGENDARY + "mobilenet_v3",
}
INPUT_SHAPE = (2, 3, 208, 208)  # stage 4 of ResNet-vd sees 13x13: its shortcut average pool has partial windows
# Values set after the random perturbation, so that a Paddle semantic shows in the output: a negative shift after
# PP-HGNetV2's first stem ReLU leaves border windows of its "SAME" max pool with only negative values, where
# padding that took part in the max would win.
PINNED = {"PPHGNetV2_B0": {"stem.stem1.lab.bias": -0.3}}


def perturb(layer: paddle.nn.Layer, rng: np.random.RandomState) -> None:
    """Give BatchNorm statistics and every constant tensor (zero biases, unit scales) random values."""
    for name, tensor in layer.state_dict().items():
        value = tensor.numpy()
        if name.endswith("._variance"):
            new = rng.uniform(0.5, 2.0, value.shape)
        elif name.endswith("._mean") or value.size == 1 or np.all(value == value.flat[0]):
            # scales (BatchNorm weights, PP-HGNetV2's learnable affine ``scale``) stay near 1: a chain of small
            # scales would leave the output independent of the input
            new = rng.normal(0.0, 0.2, value.shape) + (1.0 if name.endswith((".weight", ".scale")) else 0.0)
        else:
            continue
        tensor.set_value(new.astype(value.dtype))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("models", nargs="+", choices=sorted(MODELS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inference", action="append", default=[], choices=sorted(MODELS), metavar="NAME",
                        help="also export this model as an inference model and run it (repeatable)")
    args = parser.parse_args()
    paddle.set_device("cpu")
    for name in args.models:
        paddle.seed(args.seed)
        rng = np.random.RandomState(args.seed)
        model = getattr(importlib.import_module(MODELS[name]), name)()
        perturb(model, rng)
        state = model.state_dict()
        for key, value in PINNED.get(name, {}).items():
            state[key].set_value(np.full(state[key].shape, value, dtype="float32"))
        model.eval()
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        x = rng.uniform(-2.0, 2.0, INPUT_SHAPE).astype("float32")
        with paddle.no_grad():
            y = model(paddle.to_tensor(x)).numpy()
        paddle.save(model.state_dict(), str(folder / "model.pdparams"))
        np.save(folder / "input.npy", x)
        np.save(folder / "output.npy", y)
        if name in args.inference:
            prefix = str(folder / "inference" / "inference")
            paddle.jit.save(model, prefix, input_spec=[paddle.static.InputSpec([None, *INPUT_SHAPE[1:]], "float32")])
            info = {t.name: {"structured_name": k, "stop_gradient": t.stop_gradient, "trainable": not t.stop_gradient}
                    for k, t in model.state_dict().items()}
            with open(prefix + ".pdiparams.info", "wb") as f:
                pickle.dump(info, f, protocol=2)
            config = paddle.inference.Config(prefix + ".json", prefix + ".pdiparams")
            config.disable_gpu()
            config.disable_glog_info()
            config.switch_ir_optim(False)  # no fusion passes: Paddle Inference computes the program as saved
            predictor = paddle.inference.create_predictor(config)
            handle = predictor.get_input_handle(predictor.get_input_names()[0])
            handle.copy_from_cpu(x)
            predictor.run()
            out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
            np.save(folder / "inference_output.npy", out)
        print(f"{name}: output {list(y.shape)}, max |y| {np.abs(y).max():.4g}", flush=True)


if __name__ == "__main__":
    main()
