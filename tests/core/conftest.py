"""A toy task on Gaussian blobs: the smallest complete Task for exercising the Trainer's mechanics."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from oarkit.core.engine.metric import Metric
from oarkit.core.engine.task import DataModule, Task

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/oarkit-test-inductor")


class BlobData(DataModule):
    """Three Gaussian blobs in 8 dimensions; the split is fixed by ``seed``."""

    def __init__(self, n: int = 96, batch_size: int = 16, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        centers = torch.randn(3, 8, generator=g) * 2
        y = torch.arange(n) % 3
        x = centers[y] + torch.randn(n, 8, generator=g)
        self.train = TensorDataset(x[: n * 3 // 4], y[: n * 3 // 4])
        self.val = TensorDataset(x[n * 3 // 4:], y[n * 3 // 4:])
        self.batch_size = batch_size
        self.num_workers = 0

    def train_dataset(self) -> TensorDataset:
        return self.train

    def val_dataset(self) -> TensorDataset:
        return self.val


class Accuracy(Metric):
    main_indicator = "acc"

    def reset(self) -> None:
        self.state = {"correct": torch.zeros((), dtype=torch.long), "total": torch.zeros((), dtype=torch.long)}

    def update(self, outputs: torch.Tensor, batch: Any) -> None:
        self.state["correct"] += (outputs.argmax(-1).cpu() == batch[1].cpu()).sum()
        self.state["total"] += len(batch[1])

    def compute(self) -> dict[str, Any]:
        return {"acc": 100.0 * float(self.state["correct"]) / max(1, int(self.state["total"]))}


class RankingAUC(Metric):
    """A metric of the COCO-mAP kind: it needs every sample at once (per-sample results, gathered across ranks).

    The AUC of class 0's score against the rest: the fraction of (class 0, other) pairs ranked correctly.
    """

    main_indicator = "auc"

    def reset(self) -> None:
        self.results = []

    def update(self, outputs: torch.Tensor, batch: Any) -> None:
        scores = outputs.float().softmax(-1)[:, 0].cpu().tolist()
        self.results += list(zip(scores, (batch[1].cpu() == 0).tolist()))

    def compute(self) -> dict[str, Any]:
        pos = [s for s, positive in self.results if positive]
        neg = [s for s, positive in self.results if not positive]
        pairs = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
        return {"auc": pairs / max(1, len(pos) * len(neg)), "samples": len(self.results)}


class ToyTask(Task):
    """An MLP with BatchNorm and dropout (both matter for exact resume); can inject a NaN loss."""

    task_id = "toy"

    def __init__(self, *, norm: bool = True, dropout: float = 0.1, nan_at_step: int | None = None,
                 metric: str = "accuracy") -> None:
        self.norm, self.dropout, self.nan_at_step = norm, dropout, nan_at_step
        self.metric = metric
        self.steps = 0
        self.autocast_dtypes: list[torch.dtype] = []

    def setup(self, data: DataModule) -> nn.Module:
        layers: list[nn.Module] = [nn.Linear(8, 32)]
        if self.norm:
            layers.append(nn.BatchNorm1d(32))
        layers += [nn.ReLU(), nn.Dropout(self.dropout), nn.Linear(32, 3)]
        return nn.Sequential(*layers)

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        x, y = batch
        logits = model(x)
        self.autocast_dtypes.append(logits.dtype)
        loss = nn.functional.cross_entropy(logits.float(), y)
        self.steps += 1
        if self.nan_at_step is not None and self.steps >= self.nan_at_step:
            loss = loss * float("nan")
        return {"loss": loss, "ce": loss.detach()}

    def validation_step(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return model(batch[0]).float()

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        return [(outputs, 1)]

    def build_metric(self) -> Metric:
        return RankingAUC() if self.metric == "auc" else Accuracy()


def make_trainer(tmp_path, *, task: ToyTask | None = None, data: BlobData | None = None, **kwargs):
    from oarkit.core.engine.trainer import Trainer

    defaults = dict(output_dir=tmp_path / "run", max_epochs=2, progress=False, tensorboard=False,
                    optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    defaults.update(kwargs)
    return Trainer(task or ToyTask(), data or BlobData(), **defaults)


@pytest.fixture
def trainer_factory(tmp_path):
    return lambda **kw: make_trainer(tmp_path, **kw)


@pytest.fixture
def toy():
    """The toy classes, for tests that need more than one trainer."""
    import types

    return types.SimpleNamespace(BlobData=BlobData, ToyTask=ToyTask, Accuracy=Accuracy, RankingAUC=RankingAUC,
                                 make_trainer=make_trainer)


#: the three classes of the colour set the serving tests train on
COLOURS = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200)}


@pytest.fixture(scope="session")
def colour_clas_root(tmp_path_factory):
    """An ImageFolder of 32x32 noisy red, green and blue images: 4 train and 2 val per class."""
    import cv2
    import numpy as np

    root = tmp_path_factory.mktemp("colours")
    rng = np.random.default_rng(0)
    for split, n in (("train", 4), ("val", 2)):
        for name, colour in COLOURS.items():
            (root / split / name).mkdir(parents=True)
            for i in range(n):
                image = np.clip(np.array(colour) + rng.normal(0, 20, (32, 32, 3)), 0, 255).astype(np.uint8)
                cv2.imwrite(str(root / split / name / f"{i:03d}.png"), image)
    return root


@pytest.fixture(scope="session")
def colour_clas_run(tmp_path_factory, colour_clas_root):
    """PP-LCNet x0.25 trained two epochs on 32x32 colour images (about ten seconds), trained once per session."""
    pytest.importorskip("oarkit.clas")
    from oarkit.core.cli import main

    root = colour_clas_root
    run = tmp_path_factory.mktemp("serve") / "colours_run"
    assert main(["train", "-c", "clas/pp_lcnet_x0_5_digits_32x32", f"data.root={root}",
                 "task.model.name=clas/pp_lcnet_x0_25", "trainer.max_epochs=2", "data.batch_size=4",
                 "trainer.progress=false", "trainer.tensorboard=false", f"output_dir={run}"]) == 0
    return run


# -- oarkit serve as a process (test_serve_server.py, test_serve_ray.py) -------------------------------------------
def free_port() -> int:
    """A TCP port nothing on 127.0.0.1 listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """``(status, body)`` of a GET; an HTTP error status is an answer, not an exception."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def start_server(args: list[str], log_path: Path, *, seconds: float, ready_text: str = "",
                 env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[Any, str]:
    """Start ``oarkit serve ARGS --port <free>`` with its output in ``log_path`` and wait until
    ``/v2/health/ready`` answers 200 (and the log holds ``ready_text``); returns the process and its base URL.
    The caller kills the process when done; a server that never gets ready fails the test with its log."""
    import subprocess
    import sys
    import time

    port = free_port()
    environment = dict(os.environ, NO_ALBUMENTATIONS_UPDATE="1", HF_HUB_OFFLINE="1", **(env or {}))
    log = open(log_path, "w+")  # noqa: SIM115  (the process writes it; the test reads it back)
    server = subprocess.Popen([sys.executable, "-m", "oarkit.core.cli", "serve", *args, "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=cwd)
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    while time.monotonic() - started < seconds and server.poll() is None:
        try:
            if http_get(f"{base}/v2/health/ready")[0] == 200 and ready_text in log_path.read_text():
                return server, base
        except OSError:
            pass
        time.sleep(0.3)
    if server.poll() is None:
        server.kill()
        server.wait()
    pytest.fail(f"oarkit serve {' '.join(args)} was not ready in {seconds:g} s:\n{log_path.read_text()}")


def same_results(answer: Any, wanted: Any) -> bool:
    """Equal JSON up to float rounding (a batch of another size may sum a convolution in another order)."""
    if isinstance(answer, dict) and isinstance(wanted, dict):
        return answer.keys() == wanted.keys() and all(same_results(answer[k], wanted[k]) for k in answer)
    if isinstance(answer, list) and isinstance(wanted, list):
        return len(answer) == len(wanted) and all(same_results(x, y) for x, y in zip(answer, wanted))
    if isinstance(answer, float) and isinstance(wanted, float):
        return abs(answer - wanted) <= 1e-5 * max(1.0, abs(wanted))
    return answer == wanted



def assert_resume_bit_exact(recipe: str, args: list[str], tmp_path: Path) -> None:
    """``oarkit train -c recipe *args`` in one go, and again stopped after its first epoch and resumed from
    ``last/``: the last weights must be equal bit for bit."""
    from safetensors.torch import load_file

    from oarkit.core.cli import main
    from oarkit.core.config import build_trainer, load_config
    from oarkit.core.engine.callbacks import Callback

    class StopAfterFirstEpoch(Callback):
        def on_train_epoch_end(self, trainer, row) -> None:
            trainer.should_stop = True

    whole, halves = tmp_path / "whole", tmp_path / "halves"
    assert main(["train", "-c", recipe, *args, f"output_dir={whole}"]) == 0
    build_trainer(load_config(recipe, [*args, f"output_dir={halves}"]), callbacks=[StopAfterFirstEpoch()]).fit()
    assert main(["train", "--resume", str(halves / "last")]) == 0
    first = load_file(str(whole / "last" / "model.safetensors"))
    second = load_file(str(halves / "last" / "model.safetensors"))
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)
