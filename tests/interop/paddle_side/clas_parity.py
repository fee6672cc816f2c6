"""Paddle side of the clas parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddleclas 2.6.0).

For each PaddleClas model named on the command line: build it with random weights, perturb every BatchNorm
statistic and every constant-valued tensor (so that the output depends on every layer and a wrongly mapped or
forgotten tensor shows), save ``<name>/model.pdparams``, run Paddle's eval forward on a fixed input and save the
input and output (``input.npy``, ``output.npy``). With ``--inference NAME`` the same weights are also exported with
``paddle.jit.save`` (Paddle 3: ``inference.json`` + ``inference.pdiparams``, with the ``.pdiparams.info`` older
releases wrote; see paddle_models.save_inference_model) and run by Paddle Inference (``inference_output.npy``).

    .venv-paddle/bin/python tests/interop/paddle_side/clas_parity.py OUT_DIR PPLCNet_x1_0 ResNet50_vd \\
        PPHGNetV2_B0 --inference PPLCNet_x1_0
"""

from __future__ import annotations

import importlib

import numpy as np
import paddle
from paddle_models import (
    parse_args,
    ppcls_on_path,
    random_model,
    run_inference,
    save_checkpoint,
    save_inference_model,
)

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


def main() -> None:
    args = parse_args(__doc__, MODELS, inference="also export this model as an inference model and run it")
    paddle.set_device("cpu")
    ppcls_on_path()
    for name in args.models:
        model, x = random_model(getattr(importlib.import_module(MODELS[name]), name), INPUT_SHAPE, seed=args.seed)
        state = model.state_dict()
        for key, value in PINNED.get(name, {}).items():
            state[key].set_value(np.full(state[key].shape, value, dtype="float32"))
        folder = args.out / name
        with paddle.no_grad():
            y = model(paddle.to_tensor(x)).numpy()
        save_checkpoint(model, folder, x)
        np.save(folder / "output.npy", y)
        if name in args.inference:
            prefix = folder / "inference" / "inference"
            save_inference_model(model, prefix, INPUT_SHAPE)
            out = run_inference(prefix.with_suffix(".json"), prefix.with_suffix(".pdiparams"), x)
            np.save(folder / "inference_output.npy", out)
        print(f"{name}: output {list(y.shape)}, max |y| {np.abs(y).max():.4g}", flush=True)


if __name__ == "__main__":
    main()
