"""Registered detection models; importing this package runs every registration.

The contract every ``det/`` model keeps (modelled on torchvision's detection models):

- **Train mode** — ``model(images, targets) -> dict[str, Tensor]``: ``images`` a float tensor [B, 3, H, W]
  (normalised as the card's ``input_spec`` says, sides multiples of ``input_spec.stride_multiple``), ``targets``
  one dict per image with ``boxes`` [n, 4] float xyxy in input pixels and ``labels`` [n] int64, 0-based (n may be
  0). The result holds 0-d losses, the weighted total under ``"loss"`` (the one to backpropagate) and its parts
  (``loss_cls``, ``loss_iou``, ``loss_dfl``, ... for logging).
- **Eval mode** — ``model(images)`` returns the raw head outputs; for the Paddle ports in Paddle's own layout, so
  parity is a tensor comparison:

  * PP-YOLOE(+): ``(scores [B, C, N] after sigmoid, distances [B, N, 4] in grid units, anchor_points [N, 2] in
    grid units, strides [N, 1])``;
  * PicoDet: ``(scores [B, C, N], boxes [B, N, 4] xyxy input pixels)`` (PaddleDetection decodes inside its head);
  * RT-DETR / RT-DETRv2 / D-FINE (transformers): ``(logits [B, Q, C], pred_boxes [B, Q, 4] cxcywh in [0, 1])``;
  * torchvision detectors (:mod:`.torchvision_models`): one-stage ``(boxes [B, N, 4] xyxy pixels, scores [B, N, C])``
    for every anchor; two-stage ``(boxes [B, P, C, 4], scores [B, P, C])`` per proposal and class.

- ``model.decode(raw) -> (boxes [B, N, 4] xyxy input pixels, scores [B, N, C])``: every candidate before NMS, scores
  in [0, 1]. The kit's one post-processing (score threshold, top-k, class-aware NMS) turns them into detections;
  the exported graph holds ``forward`` + ``decode`` (+ NMS when asked). ``decode`` needs nothing but ``raw``: a
  model whose raw output does not carry the input size keeps what it needs in it (RT-DETR's boxes are relative:
  its raw output carries the input size as a third element).
- ``model.nms_inside`` (a bool, ``False`` unless said): ``True`` for a model whose eval forward already applies
  its own score threshold and NMS (no registered model does: the wrapped torchvision detectors leave theirs out of
  the eval path and hand every candidate to the kit's NMS).
- ``model.set_epoch(epoch)``: the (0-based) training epoch. PP-YOLOE and PicoDet assign labels with ATSS during
  the first ``model.static_assigner_epoch`` epochs and with the task-aligned assigner after (Paddle's
  ``epoch_id``); the task calls it from a callback at each epoch start (:class:`oarkit.det.assigners
  .AssignerEpochCallback`). Other models accept and ignore it.
- ``model.int8_float_modules`` (a tuple of module paths, empty unless said): layers that decode rather than
  detect and stay float in int8 exports (PP-YOLOE's fixed DFL projection ``yolo_head.proj_conv``, a convolution
  that integrates the distance bins; PicoDet's integral is a matrix product, which the kit's int8 op types leave
  float anyway).
- ``model.export_tolerances`` (a dict, empty unless said): bounds of the float export comparison
  (:class:`~oarkit.det.export_graph.DetectionComparator`'s ``tolerances``) where float rounding grows past the
  format's through the model's own selection steps (the R-CNNs: proposals chosen by top-k and NMS, then pooled at
  their coordinates; see :data:`.torchvision_models.TWO_STAGE_EXPORT_TOLERANCES`).
- ``model.reparameterize()`` where the model has re-parameterizable blocks (PP-YOLOE's RepVGG blocks): folded
  before export with equal outputs.
- Cards: task id ``det``, a :class:`~oarkit.core.cards.DetectorInput` (size the weights were evaluated at, stride
  multiple, mean/std), ``label_names`` naming a set in :data:`oarkit.det.models.zoo.LABEL_SETS` (``coco``: the 80
  COCO classes, ``cdla``: the 10 layout classes), the weights (URL, licence, source) and the published mAP.

Families: :mod:`.ppyoloe` (PP-YOLOE, PP-YOLOE+ s/m/l/x), :mod:`.picodet` (PicoDet s/m/l, the layout model),
:mod:`.transformers_models` (RT-DETR, RT-DETRv2, D-FINE), :mod:`.torchvision_models`.
"""

from oarkit.det.models import (  # noqa: F401  imported for their registrations
    picodet,  # det/picodet_{s,m,l}_{320,416}, det/picodet_l_640
    ppyoloe,  # det/ppyoloe_crn_{s,m,l,x}, det/ppyoloe_plus_crn_{s,m,l,x}
    torchvision_models,  # det/<torchvision name>: Faster / Mask R-CNN, RetinaNet, FCOS, SSD, SSDlite
    transformers_models,  # det/rtdetr_*, det/rtdetrv2_*, det/dfine_*
)
from oarkit.det.models.base import DetectionModel, check_targets, pad_targets
from oarkit.det.models.zoo import COCO_CLASSES, LABEL_SETS, labels_of

__all__ = ["COCO_CLASSES", "LABEL_SETS", "DetectionModel", "check_targets", "labels_of", "pad_targets"]
