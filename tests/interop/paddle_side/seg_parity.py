"""Paddle side of the seg parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddleseg 2.8.0).

For each PaddleSeg family named on the command line: build the model from paddleseg's own classes with random
weights, give every convolution and Linear weight unit-variance outputs and perturb every BatchNorm statistic and
every constant-valued tensor (so that the output depends on every layer and a wrongly mapped or forgotten tensor
shows), save ``<family>/model.pdparams``, run Paddle's eval forward on a fixed input and save the input and the
main logits (``input.npy``, ``output.npy``), and every head's logits (``heads.npz``: the auxiliary heads too).

The input is 72x104: odd feature sizes from stride 8 on (9x13, 5x7, 3x4) exercise what differs between the
frameworks at borders (exclusive average pooling, Paddle's asymmetric 'same' padding, adaptive pooling bins,
resizing by a scale factor).

    .venv-paddle/bin/python tests/interop/paddle_side/seg_parity.py OUT_DIR pp_liteseg_stdc1 unet ...
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import numpy as np
import paddle
from paddle_models import parse_args, random_model, save_checkpoint
from paddleseg import models as M
from paddleseg.models import backbones as B

INPUT_SHAPE = (2, 3, 72, 104)

# family -> the PaddleSeg model its oarkit port mirrors, built as PaddleSeg's configs build it. DeepLabV3+ keeps
# the registered ResNet50-vd (bottleneck blocks); DeepLabV3 and PSPNet run on the smallest ResNet-vd PaddleSeg
# builds, ResNet18-vd (basic blocks), to keep the test fast.
FAMILIES: dict[str, Callable[[], paddle.nn.Layer]] = {
    "pp_liteseg_stdc1": lambda: M.PPLiteSeg(19, B.STDC1(), arm_out_chs=[32, 64, 128], seg_head_inter_chs=[32, 64, 64]),
    "pp_mobileseg_tiny": lambda: M.PPMobileSeg(150, B.MobileSeg_Tiny(inj_type="AAM", out_feat_chs=[32, 64, 128])),
    "bisenetv1_resnet18_vd": lambda: M.BiseNetV1(19, B.ResNet18_vd(output_stride=8)),
    "bisenetv2": lambda: M.BiSeNetV2(19),
    "deeplabv3_resnet18_vd_os8": lambda: M.DeepLabV3(19, B.ResNet18_vd(output_stride=8, multi_grid=(1, 2, 4)),
                                                      backbone_indices=(3,), aspp_ratios=(1, 12, 24, 36)),
    "deeplabv3p_resnet50_vd_os8": lambda: M.DeepLabV3P(19, B.ResNet50_vd(output_stride=8, multi_grid=(1, 2, 4)),
                                                        backbone_indices=(0, 3), aspp_ratios=(1, 12, 24, 36)),
    "fcn_hrnet_w18": lambda: M.FCN(19, B.HRNet_W18()),
    "ocrnet_hrnet_w18": lambda: M.OCRNet(19, B.HRNet_W18(), backbone_indices=(0,)),
    "pspnet_resnet18_vd_os8": lambda: M.PSPNet(19, B.ResNet18_vd(output_stride=8)),
    "unet": lambda: M.UNet(19),
}

#: families whose models return auxiliary logits in training
WITH_AUXILIARY_HEADS = {"pp_liteseg_stdc1", "bisenetv1_resnet18_vd", "bisenetv2", "ocrnet_hrnet_w18",
                        "pspnet_resnet18_vd_os8"}


def unit_variance_weights(name: str, value: np.ndarray, rng: np.random.RandomState) -> np.ndarray | None:
    """Every convolution and Linear weight gets a variance of 1 / fan-in: several PaddleSeg backbones initialise
    convolutions with a standard deviation of 0.001, under which the logits hardly depend on the input or the deep
    layers."""
    if name.endswith(".weight") and value.ndim in (2, 4):
        fan_in = value.shape[0] if value.ndim == 2 else int(np.prod(value.shape[1:]))  # Linear is [in, out]
        return rng.normal(0.0, fan_in**-0.5, value.shape)
    return None


def main() -> None:
    args = parse_args(__doc__, FAMILIES)
    logging.getLogger("paddleseg").setLevel(logging.WARNING)
    paddle.set_device("cpu")
    for name in args.models:
        model, x = random_model(FAMILIES[name], INPUT_SHAPE, seed=args.seed, weights=unit_variance_weights)
        folder = args.out / name
        start = time.perf_counter()
        with paddle.no_grad():
            y = model(paddle.to_tensor(x))[0].numpy()  # the main logits
            heads = [y]
            if name in WITH_AUXILIARY_HEADS:
                # The top-level training flag alone makes PaddleSeg models return every head while their layers
                # stay in eval mode: this proves the auxiliary heads' weights as well.
                model.training = True
                heads = [t.numpy() for t in model(paddle.to_tensor(x))]
                model.training = False
        save_checkpoint(model, folder, x)
        np.save(folder / "output.npy", y)
        np.savez(folder / "heads.npz", *heads)
        print(f"{name}: output {list(y.shape)}, max |y| {np.abs(y).max():.4g}, {len(heads)} head(s), "
              f"{time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
