"""Paddle side of the det parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddledet 2.6.0 --no-deps).

For each model named on the command line: build it from paddledet's layers as PaddleDetection's configs do, with
random weights, perturb every BatchNorm statistic and every constant-valued tensor (so that the output depends on
every layer), save ``<name>/model.pdparams``, run Paddle's eval forward on a fixed input and save the input and the
head's outputs (``input.npy``, ``output_<i>.npy``), then the head's training losses on fixed ground truths before
and after the assigner switch (``targets.npz``, ``losses.json``). The module paths are those of PaddleDetection's
architectures (``YOLOv3``: ``backbone``, ``neck``, ``yolo_head``; ``PicoDet``: ``backbone``, ``neck``, ``head``), so
the saved state dict is what a PaddleDetection checkpoint of the model holds.

RT-DETR is not here: paddledet 2.6.0, the newest paddledet on the package registry, predates it (its wheel has
no ``ppdet/modeling/transformers/rtdetr_transformer.py`` nor ``hybrid_encoder.py``).

    .venv-paddle/bin/python tests/interop/paddle_side/det_parity.py OUT_DIR ppyoloe_plus_crn_s picodet_s_320 \\
        --inference ppyoloe_plus_crn_s
"""

from __future__ import annotations

import json

import numpy as np
import paddle
from paddle_models import parse_args, random_model, save_checkpoint, save_inference_model

INPUT_SHAPE = (2, 3, 160, 160)


def small_constant_kernels(name: str, value: np.ndarray, rng: np.random.RandomState) -> np.ndarray | None:
    """Constant convolution kernels get small random values: the heads start from all-zero kernels, which the
    constants' N(0, 0.2) would turn into saturated sigmoids that hide every difference."""
    if value.ndim > 1 and np.all(value == value.flat[0]):
        return rng.normal(0.0, 0.01, value.shape)
    return None


class Architecture(paddle.nn.Layer):
    """backbone -> neck -> head, named as PaddleDetection's architecture names them; eval forward only."""

    def __init__(self, backbone: paddle.nn.Layer, neck: paddle.nn.Layer, head: paddle.nn.Layer, head_name: str):
        super().__init__()
        self.backbone, self.neck = backbone, neck
        self.add_sublayer(head_name, head)
        self.head_name = head_name

    def forward(self, x):
        return getattr(self, self.head_name)(self.neck(self.backbone({"image": x})))


def ppyoloe_plus_crn_s(use_alpha: bool = True) -> Architecture:
    """configs/ppyoloe/_base_/ppyoloe_plus_crn.yml at width 0.50, depth 0.33 (ppyoloe_plus_crn_s_80e_coco)."""
    from ppdet.modeling.backbones.cspresnet import CSPResNet
    from ppdet.modeling.heads.ppyoloe_head import PPYOLOEHead
    from ppdet.modeling.necks.custom_pan import CustomCSPPAN

    width, depth = 0.50, 0.33
    backbone = CSPResNet(layers=[3, 6, 6, 3], channels=[64, 128, 256, 512, 1024], return_idx=[1, 2, 3],
                         use_large_stem=True, use_alpha=use_alpha, width_mult=width, depth_mult=depth)
    neck = CustomCSPPAN(in_channels=[s.channels for s in backbone.out_shape], out_channels=[768, 384, 192],
                        stage_num=1, block_num=3, act="swish", spp=True, use_alpha=use_alpha, width_mult=width,
                        depth_mult=depth)
    head = PPYOLOEHead(in_channels=[s.channels for s in neck.out_shape], num_classes=80, fpn_strides=[32, 16, 8],
                       grid_cell_scale=5.0, grid_cell_offset=0.5, static_assigner_epoch=30)
    return Architecture(backbone, neck, head, "yolo_head")


def picodet_s_320() -> Architecture:
    """configs/picodet/picodet_s_320_coco_lcnet.yml over _base_/picodet_v2.yml (LCNet x0.75, LCPAN 96, PicoHeadV2)."""
    from ppdet.modeling.backbones.lcnet import LCNet
    from ppdet.modeling.heads.pico_head import PicoFeat, PicoHeadV2
    from ppdet.modeling.losses import DistributionFocalLoss, GIoULoss
    from ppdet.modeling.losses.varifocal_loss import VarifocalLoss
    from ppdet.modeling.necks.lc_pan import LCPAN

    backbone = LCNet(scale=0.75, feature_maps=[3, 4, 5])
    neck = LCPAN(in_channels=[s.channels for s in backbone.out_shape], out_channels=96, use_depthwise=True,
                 num_features=4)
    feat = PicoFeat(feat_in=96, feat_out=96, num_convs=2, num_fpn_stride=4, norm_type="bn", share_cls_reg=True,
                    use_se=True)
    head = PicoHeadV2(conv_feat=feat, num_classes=80, fpn_stride=[8, 16, 32, 64], prior_prob=0.01, reg_max=7,
                      feat_in_chan=96, cell_offset=0.5, grid_cell_scale=5.0, static_assigner_epoch=100,
                      use_align_head=True,
                      loss_class=VarifocalLoss(use_sigmoid=False, iou_weighted=True, loss_weight=1.0),
                      loss_dfl=DistributionFocalLoss(loss_weight=0.5), loss_bbox=GIoULoss(loss_weight=2.5))
    return Architecture(backbone, neck, head, "head")


def ppyoloe_crn_s() -> Architecture:
    """configs/ppyoloe/_base_/ppyoloe_crn.yml (PP-YOLOE, no RepVGG alpha) at width 0.50, depth 0.33."""
    return ppyoloe_plus_crn_s(use_alpha=False)


def picodet_lcnet_x1_0_layout() -> Architecture:
    """PaddleOCR's layout PicoDet (configs/picodet/legacy_model: LCNet x1.0, CSPPAN 128 with four outputs, PicoHead
    with a shared 4-conv tower and reg_max 7) for the ten CDLA classes."""
    from ppdet.modeling.backbones.lcnet import LCNet
    from ppdet.modeling.heads.pico_head import PicoFeat, PicoHead
    from ppdet.modeling.losses import DistributionFocalLoss, GIoULoss
    from ppdet.modeling.losses.varifocal_loss import VarifocalLoss
    from ppdet.modeling.necks.csp_pan import CSPPAN

    backbone = LCNet(scale=1.0, feature_maps=[3, 4, 5])
    neck = CSPPAN(in_channels=[s.channels for s in backbone.out_shape], out_channels=128, use_depthwise=True,
                  num_csp_blocks=1, num_features=4)
    feat = PicoFeat(feat_in=128, feat_out=128, num_convs=4, num_fpn_stride=4, norm_type="bn", share_cls_reg=True)
    head = PicoHead(conv_feat=feat, num_classes=10, fpn_stride=[8, 16, 32, 64], prior_prob=0.01, reg_max=7,
                    feat_in_chan=128, cell_offset=0.5,
                    loss_class=VarifocalLoss(use_sigmoid=True, iou_weighted=True, loss_weight=1.0),
                    loss_dfl=DistributionFocalLoss(loss_weight=0.25), loss_bbox=GIoULoss(loss_weight=2.0))
    return Architecture(backbone, neck, head, "head")


MODELS = {"ppyoloe_plus_crn_s": ppyoloe_plus_crn_s, "ppyoloe_crn_s": ppyoloe_crn_s, "picodet_s_320": picodet_s_320,
          "picodet_lcnet_x1_0_layout": picodet_lcnet_x1_0_layout}
#: models whose training losses are compared (the layout PicoDet trained with SimOTA in Paddle, not here)
WITH_LOSSES = ("ppyoloe_plus_crn_s", "ppyoloe_crn_s", "picodet_s_320")
#: padded ground truths of the loss check (image 1 has one box and a padding row); saved beside the outputs
GT_BBOX = np.array([[[10, 12, 90, 100], [60, 50, 150, 140]], [[5, 5, 60, 70], [0, 0, 0, 0]]], "float32")
GT_CLASS = np.array([[[3], [17]], [[0], [0]]], "int64")
PAD_GT_MASK = np.array([[[1], [1]], [[1], [0]]], "float32")
#: an epoch before the ATSS -> task-aligned switch and one after it (30 for PP-YOLOE+, 100 for PicoDet)
EPOCHS = (0, 200)


def training_losses(model: Architecture, x: np.ndarray) -> dict[str, dict[str, float]]:
    """The head's training losses on the fixed ground truths at each of :data:`EPOCHS`, BatchNorm in eval mode (its
    running statistics, as on our side). The assigners are injected as the configs do (ATSS top 9 for PP-YOLOE,
    top 4 for PicoDet; task-aligned top 13, alpha 1, beta 6). Labels go in as int64: PaddleDetection's readers
    give int32 ``gt_class``, which the assigners' ``argmax`` (int64) indexing refuses on Paddle 3.3.1 ("Type
    promotion only support calculations between floating-point numbers", the training failure the interop issue
    reports)."""
    from ppdet.modeling.assigners import ATSSAssigner, TaskAlignedAssigner

    head = getattr(model, model.head_name)
    head.static_assigner = ATSSAssigner(topk=9 if model.head_name == "yolo_head" else 4, num_classes=80)
    head.assigner = TaskAlignedAssigner(topk=13, alpha=1.0, beta=6.0)
    gt = {"gt_bbox": paddle.to_tensor(GT_BBOX), "gt_class": paddle.to_tensor(GT_CLASS),
          "pad_gt_mask": paddle.to_tensor(PAD_GT_MASK), "im_id": paddle.to_tensor([[0], [1]])}
    feats = model.neck(model.backbone({"image": paddle.to_tensor(x)}))
    losses = {}
    for epoch in EPOCHS:
        if model.head_name == "yolo_head":
            out = head.forward_train(feats, {**gt, "epoch_id": epoch})
        else:
            out = head.get_loss(head.forward_train(feats), {**gt, "epoch_id": epoch})
        losses[str(epoch)] = {k: float(v) for k, v in out.items()}
    return losses


def main() -> None:
    args = parse_args(__doc__, MODELS, inference="also save this model as an inference model")
    paddle.set_device("cpu")
    for name in args.models:
        model, x = random_model(MODELS[name], INPUT_SHAPE, seed=args.seed, low=0.0, high=1.0,
                                weights=small_constant_kernels)
        folder = args.out / name
        with paddle.no_grad():
            outputs = model(paddle.to_tensor(x))
        save_checkpoint(model, folder, x)
        for i, y in enumerate(outputs):
            np.save(folder / f"output_{i}.npy", y.numpy())
        if name in args.inference:
            # Paddle Inference itself cannot run this program on 3.3.1: CSPRepResNet's ``if self.alpha:`` becomes a
            # PIR ``if`` whose regions the predictor refuses ("The size 0 of regions must be equal to 2"), so the
            # test compares the converted weights with the dygraph outputs instead (the RepVGG-folded deploy form
            # runs: bench/paddle_side_by_side.py times it).
            save_inference_model(model, folder / "inference" / "inference", INPUT_SHAPE)
        if name in WITH_LOSSES:
            np.savez(folder / "targets.npz", gt_bbox=GT_BBOX, gt_class=GT_CLASS, pad_gt_mask=PAD_GT_MASK)
            (folder / "losses.json").write_text(json.dumps(training_losses(model, x)))
        print(f"{name}: outputs {[list(y.shape) for y in outputs]}", flush=True)


if __name__ == "__main__":
    main()
