"""Paddle models for the parity scripts beside this file (they run inside .venv-paddle, with this folder on the
path): build with a fixed seed and perturb, save as a Paddle checkpoint or inference model, run Paddle Inference.

Random initialisations leave BatchNorm statistics at 0 / 1 and many tensors constant (zero biases, unit scales,
zero-initialised head kernels): a converter that forgets or swaps such a tensor would still match. :func:`perturb`
gives every one of them random values, so that the output depends on every layer.
"""

from __future__ import annotations

import argparse
import importlib.util
import pickle
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import paddle

#: ``(name, value, rng) -> new value``, or ``None`` to leave the tensor to :func:`perturb`'s rules
WeightRule = Callable[[str, np.ndarray, np.random.RandomState], "np.ndarray | None"]


def parse_args(doc: str, models: Iterable[str], *, inference: str | None = None) -> argparse.Namespace:
    """The scripts' command line: ``OUT`` and the models to build (``args.out``, ``args.models``), ``--seed``, and
    where ``inference`` says what it does, ``--inference NAME`` (repeatable, ``args.inference``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("models", nargs="+", choices=sorted(models))
    parser.add_argument("--seed", type=int, default=0)
    if inference:
        parser.add_argument("--inference", action="append", default=[], choices=sorted(models), metavar="NAME",
                            help=f"{inference} (repeatable)")
    return parser.parse_args()


def perturb(layer: paddle.nn.Layer, rng: np.random.RandomState, weights: WeightRule | None = None) -> None:
    """Give BatchNorm statistics and every constant tensor (zero biases, unit scales) random values, in one pass
    over the state dict in its order.

    Args:
        layer: the model, changed in place.
        rng: the random stream (one draw per changed tensor).
        weights: a family's own rule, asked first for every tensor (e.g. unit-variance convolutions).
    """
    for name, tensor in layer.state_dict().items():
        value = tensor.numpy()
        new = weights(name, value, rng) if weights is not None else None
        if new is None:
            if name.endswith("._variance"):
                new = rng.uniform(0.5, 2.0, value.shape)
            elif name.endswith("._mean") or value.size == 1 or np.all(value == value.flat[0]):
                # scales (BatchNorm and LayerNorm weights, PP-HGNetV2's learnable affine ``scale``) stay near 1: a
                # chain of small scales would leave the output independent of the input
                new = rng.normal(0.0, 0.2, value.shape) + (1.0 if name.endswith((".weight", ".scale")) else 0.0)
            else:
                continue
        tensor.set_value(new.astype(value.dtype))


def calibrate_batch_norm(layer: paddle.nn.Layer, x: np.ndarray, rng: np.random.RandomState) -> None:
    """Set every BatchNorm's statistics to those of its own input on the batch ``x`` (one training-mode forward
    with momentum 0), then move them off by a random fraction (variance x 0.7 .. 1.4, mean + 0.1 standard
    deviation x N(0, 1)), so that a converter that drops or swaps them still shows.

    For deep models whose activations drawn statistics would let vanish or explode; run it after :func:`perturb`
    (the measured statistics are those of the perturbed weights). Leaves the model in training mode."""
    norms = [m for m in layer.sublayers() if hasattr(m, "_momentum") and hasattr(m, "_variance")]
    momenta = [m._momentum for m in norms]
    for m in norms:
        m._momentum = 0.0
    layer.train()
    with paddle.no_grad():
        layer(paddle.to_tensor(x))
    for m, momentum in zip(norms, momenta):
        m._momentum = momentum
        variance = m._variance.numpy()
        m._mean.set_value(m._mean.numpy() + 0.1 * np.sqrt(variance) * rng.normal(size=variance.shape).astype("float32"))
        m._variance.set_value(variance * rng.uniform(0.7, 1.4, variance.shape).astype("float32"))


def random_model(build: Callable[[], paddle.nn.Layer], shape: tuple[int, ...], *, seed: int = 0,
                 low: float = -2.0, high: float = 2.0, weights: WeightRule | None = None
                 ) -> tuple[paddle.nn.Layer, np.ndarray]:
    """``build()`` under ``paddle.seed(seed)``, perturbed and in eval mode, and a fixed input of ``shape`` drawn
    uniformly from ``[low, high)`` after the perturbation (from the same ``RandomState(seed)``)."""
    paddle.seed(seed)
    rng = np.random.RandomState(seed)
    model = build()
    perturb(model, rng, weights)
    model.eval()
    return model, rng.uniform(low, high, shape).astype("float32")


def save_checkpoint(model: paddle.nn.Layer, folder: Path, x: np.ndarray) -> None:
    """``folder/model.pdparams`` (what the kit's training saves) and ``folder/input.npy``."""
    folder.mkdir(parents=True, exist_ok=True)
    paddle.save(model.state_dict(), str(folder / "model.pdparams"))
    np.save(folder / "input.npy", x)


def save_inference_model(model: paddle.nn.Layer, prefix: Path, shape: tuple[int, ...]) -> None:
    """``paddle.jit.save`` with a dynamic batch (Paddle 3: ``prefix.json`` + ``prefix.pdiparams``), and the
    ``prefix.pdiparams.info`` older Paddle releases wrote beside them: Paddle 3 no longer writes it (and its
    legacy-program mode fails to trace ``paddle.multiply`` in 3.3.1), so it is written here as they did, a pickle of
    ``{static name: {"structured_name": name, ...}}``."""
    paddle.jit.save(model, str(prefix), input_spec=[paddle.static.InputSpec([None, *shape[1:]], "float32")])
    info = {t.name: {"structured_name": k, "stop_gradient": t.stop_gradient, "trainable": not t.stop_gradient}
            for k, t in model.state_dict().items()}
    with open(f"{prefix}.pdiparams.info", "wb") as f:
        pickle.dump(info, f, protocol=2)


def run_inference(program: Path, params: Path, x: np.ndarray) -> np.ndarray:
    """Paddle Inference's first output on ``x`` for the program (``.json`` or ``.pdmodel``) and its ``.pdiparams``,
    with no fusion passes: it computes the program as saved."""
    config = paddle.inference.Config(str(program), str(params))
    config.disable_gpu()
    config.disable_glog_info()
    config.switch_ir_optim(False)
    predictor = paddle.inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    handle.reshape(list(x.shape))
    handle.copy_from_cpu(x)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def ppcls_on_path() -> None:
    """Make PaddleClas's models importable as ``ppcls``: its wheel installs the package as paddleclas/ppcls, whose
    modules import ``ppcls``; importing a backbone directly avoids paddleclas/__init__.py (its inference front end
    pulls in cv2, faiss, ...)."""
    if importlib.util.find_spec("ppcls") is not None:
        return
    sys.path.insert(0, importlib.util.find_spec("paddleclas").submodule_search_locations[0])
    from ppcls.utils import logger as ppcls_logger

    ppcls_logger.init_logger()  # ResNet's constructor logs a deprecation warning through it
