"""COCO mAP under torchrun: two gloo processes each evaluate their shard of the images through the one evaluation
path, the per-image results are gathered, and the numbers equal one process's (also when a padding sampler
repeats an image on the second rank)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oarkit.det import prepare_det_shapes

SCRIPT = """
import json, sys
import torch
from torch import nn
from torch.utils.data import DistributedSampler, SequentialSampler
from oarkit.core import distributed
from oarkit.core.engine.evaluation import build_loader, run_evaluation
from oarkit.det import DetectionData, DetectionTask


class JitteredTruth(DetectionTask):
    # Detections made from each image's ground truth: boxes moved by a few pixels, seeded scores, and one false
    # positive per image, all drawn from the image id (the same whichever rank sees it), so per-class APs lie
    # strictly between 0 and 1 and depend on every image at once.
    def validation_step(self, model, batch):
        out = []
        for t in batch[1]:
            g = torch.Generator().manual_seed(int(t["image_id"]))
            n = len(t["boxes"])
            corner = torch.rand(1, 2, generator=g) * 40
            false_positive = torch.cat([corner, corner + 8 + torch.rand(1, 2, generator=g) * 16], dim=1)
            out.append({"boxes": torch.cat([t["boxes"] + torch.randn(n, 4, generator=g) * 2, false_positive]),
                        "scores": torch.rand(n + 1, generator=g),
                        "labels": torch.cat([t["labels"], torch.randint(0, 4, (1,), generator=g)])})
        return out


args = json.loads(sys.argv[1])
ctx = distributed.context(torch.device("cpu"))
data = DetectionData(root=args["root"], size=64)
task = JitteredTruth()
task.labels = list(data.classes)
dataset = data.val_dataset()
samplers = {"shard": distributed.ShardSampler(len(dataset), ctx.rank, ctx.world_size) if ctx.enabled
            else SequentialSampler(dataset)}
if ctx.enabled:  # pads the shards to equal length by repeating images; the metric keeps one result per image
    samplers["padded"] = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=False)


def synchronize(metric):  # what the Trainer does before compute()
    metric.synchronize(lambda t: distributed.all_reduce_sum(t, torch.device("cpu")), distributed.all_gather_objects)


out = {"world": ctx.world_size}
for name, sampler in samplers.items():
    loader = build_loader(dataset, data, task, train=False, batch_size=2, sampler=sampler)
    results, _ = run_evaluation(task, nn.Identity(), loader, synchronize=synchronize)
    out[name] = {"seen": len(sampler), **{k: v for k, v in results.items() if isinstance(v, (int, float))}}
if ctx.is_main:
    with open(args["out"], "w") as f:
        json.dump(out, f)
distributed.cleanup()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(script: Path, args: dict, *, nproc: int | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env.update(OMP_NUM_THREADS="1", NO_ALBUMENTATIONS_UPDATE="1", HF_HUB_OFFLINE="1")
    launcher = [sys.executable] if nproc is None else [
        sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1",
        "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{_free_port()}"]
    proc = subprocess.run([*launcher, str(script), json.dumps(args)], capture_output=True, text=True, timeout=180,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(Path(args["out"]).read_text())


def test_coco_map_gathered_from_two_processes_equals_one_process(tmp_path):
    root = prepare_det_shapes(tmp_path / "shapes", num_train=1, num_val=7, size=64)  # 7 images: shards of 4 and 3
    script = tmp_path / "evaluate.py"
    script.write_text(textwrap.dedent(SCRIPT))
    two = _run(script, {"root": str(root), "out": str(tmp_path / "two.json")}, nproc=2)
    one = _run(script, {"root": str(root), "out": str(tmp_path / "one.json")}, nproc=None)
    assert two["world"] == 2 and one["world"] == 1
    expected = one["shard"]
    assert expected["num_images"] == 7 and 0.05 < expected["map"] < 0.95, expected  # neither trivial nor perfect
    assert two["shard"]["seen"] == 4 and two["padded"]["seen"] == 4  # rank 0's share; rank 1 pads 3 to 4
    for name in ("shard", "padded"):
        gathered = {k: v for k, v in two[name].items() if k != "seen"}
        assert gathered == pytest.approx({k: v for k, v in expected.items() if k != "seen"}, abs=1e-12), name
