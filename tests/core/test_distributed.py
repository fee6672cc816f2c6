"""Distributed training under torchrun on the CPU (gloo): equivalence with one process, metric reduction,
resume across world sizes, restart after a killed worker, two 'nodes' on 127.0.0.1, FSDP2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from oarkit.core.engine import checkpoint as ckpt

HERE = Path(__file__).parent

SCRIPT = """
import importlib.util, json, logging, os, signal, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO)
import torch
spec = importlib.util.spec_from_file_location("toy_conftest", {conftest!r})
toy = importlib.util.module_from_spec(spec); spec.loader.exec_module(toy)
from oarkit.core.engine.callbacks import Callback, StopAfter
from oarkit.core import distributed

args = json.loads(sys.argv[1])
callbacks = []
if args.get("stop_after"):
    callbacks.append(StopAfter(epochs=args["stop_after"]))

class DieOnce(Callback):
    all_ranks = True
    def on_train_batch_end(self, trainer, losses, batch_idx):
        first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
        if first_attempt and trainer.epoch == 1 and batch_idx == 2 and trainer.dist.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)

if args.get("die"):
    callbacks.append(DieOnce())
task = toy.ToyTask(norm=args.get("norm", False), dropout=0.0, metric=args.get("metric", "accuracy"))
if args.get("dml"):
    from oarkit.core.distill.dml import MutualLearningTask
    task = MutualLearningTask(task, temperature=2.0, alpha=0.5)
trainer = toy.make_trainer(Path(args["out"]), task=task,
                           data=toy.BlobData(n=args.get("n", 128), batch_size=args["batch"]),
                           max_epochs=args.get("epochs", 2), accumulate_grad_batches=args.get("accumulate", 1),
                           strategy=args.get("strategy", "ddp"), callbacks=callbacks, resume=args.get("resume", False),
                           optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
trainer.fit()
metrics = trainer.evaluate()
buffers = distributed.all_gather_objects([b.clone() for b in trainer.model.buffers() if b.is_floating_point()])
spread = max((float((a - b).abs().max()) for other in buffers[1:] for a, b in zip(buffers[0], other)), default=0.0)
if trainer.is_main:
    Path(args["out"], "result.json").write_text(json.dumps({{"metrics": metrics, "world": trainer.dist.world_size,
                                                              "history": len(trainer.history),
                                                              "buffer_spread": spread}}))
distributed.cleanup()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "train_toy.py"
    path.write_text(textwrap.dedent(SCRIPT.format(conftest=str(HERE / "conftest.py"))))
    return path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("WORLD_SIZE", None)
    env.update(OMP_NUM_THREADS="1", NO_ALBUMENTATIONS_UPDATE="1")
    return env


def torchrun(tmp_path: Path, args: dict, *, nproc: int = 2, extra: tuple[str, ...] = (), timeout: int = 240):
    # An explicit c10d endpoint rather than --standalone: after a restart, --standalone's second round fails
    # to connect gloo's mesh on this torch (seen with --max-restarts=1).
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{_free_port()}", *extra,
           str(_script(tmp_path)), json.dumps(args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    assert proc.returncode == 0, _failure_report(proc)
    return proc


def _failure_report(proc: subprocess.CompletedProcess) -> str:
    """What a failed torchrun said: every line naming an error or a fatal signal (a C++ abort inside gloo prints
    "terminate called ... what(): ..." long before torchrun's own summary), then the end of its stderr."""
    marks = ("Error", "error:", "terminate called", "what():", "Signal", "SIG", "Traceback")
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if any(m in line for m in marks)]
    tail = proc.stderr[-4000:]
    return f"torchrun exited {proc.returncode}:\n" + "\n".join(lines[-40:]) + f"\n--- stderr tail ---\n{tail}"


def single(toy, out: Path, *, batch: int, accumulate: int = 1, n: int = 128, epochs: int = 2, metric: str = "accuracy",
           task=None, **kw):
    trainer = toy.make_trainer(out, task=task or toy.ToyTask(norm=False, dropout=0.0, metric=metric),
                               data=toy.BlobData(n=n, batch_size=batch), max_epochs=epochs,
                               accumulate_grad_batches=accumulate,
                               optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), **kw)
    trainer.fit()
    return trainer


def _assert_same_weights(a: Path, b: Path, tol: float = 1e-5) -> None:
    wa = load_file(str(a / "run" / "last" / "model.safetensors"))
    wb = load_file(str(b / "run" / "last" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=tol, atol=tol, msg=k)


@pytest.mark.parametrize("accumulate", [1, 2])
def test_two_processes_match_one_process_with_twice_the_batch(tmp_path, toy, accumulate):
    torchrun(tmp_path / "ddp", {"out": str(tmp_path / "ddp"), "batch": 8, "accumulate": accumulate})
    single(toy, tmp_path / "one", batch=16, accumulate=accumulate)
    _assert_same_weights(tmp_path / "ddp", tmp_path / "one")
    assert json.loads((tmp_path / "ddp" / "result.json").read_text())["world"] == 2


def test_a_mutual_learning_peer_averages_its_gradients_across_ranks(tmp_path, toy):
    # the DML peer sits outside DDP (extras): with its gradients averaged, two ranks train it as one process with
    # twice the batch does; without, rank 0's peer would follow rank 0's half of the data alone
    from oarkit.core.distill.dml import MutualLearningTask

    torchrun(tmp_path / "ddp", {"out": str(tmp_path / "ddp"), "batch": 8, "dml": True})
    single(toy, tmp_path / "one", batch=16,
           task=MutualLearningTask(toy.ToyTask(norm=False, dropout=0.0), temperature=2.0, alpha=0.5))
    _assert_same_weights(tmp_path / "ddp", tmp_path / "one")
    peers = []
    for run in ("ddp", "one"):
        state = torch.load(tmp_path / run / "run" / "last" / ckpt.STATE_FILE, weights_only=True)
        peers.append(next(s["weights"] for k, s in state["callbacks"].items() if k.endswith("ExtrasState")))
    assert peers[0].keys() == peers[1].keys() and peers[0]
    for k in peers[0]:
        torch.testing.assert_close(peers[0][k], peers[1][k], rtol=1e-5, atol=1e-5, msg=k)


def test_fsdp_matches_one_process_and_saves_full_weights(tmp_path, toy):
    torchrun(tmp_path / "fsdp", {"out": str(tmp_path / "fsdp"), "batch": 8, "strategy": "fsdp"})
    single(toy, tmp_path / "one", batch=16)
    _assert_same_weights(tmp_path / "fsdp", tmp_path / "one")


def test_metric_is_reduced_to_the_single_process_number(tmp_path, toy):
    # 25 validation samples: the ranks get 13 and 12, so a mean of per-rank means would be wrong.
    torchrun(tmp_path / "ddp", {"out": str(tmp_path / "ddp"), "batch": 8, "n": 100, "epochs": 1})
    reduced = json.loads((tmp_path / "ddp" / "result.json").read_text())["metrics"]["acc"]
    trainer = single(toy, tmp_path / "one", batch=16, n=100, epochs=1)
    trainer.model.load_state_dict(load_file(str(tmp_path / "ddp" / "run" / "last" / "model.safetensors")))
    assert trainer.evaluate()["acc"] == pytest.approx(reduced, abs=1e-9)


def test_per_sample_results_are_gathered_to_the_single_process_number(tmp_path, toy):
    # A ranking AUC needs every sample at once: per-rank AUCs cannot be combined, gathered results can.
    torchrun(tmp_path / "ddp", {"out": str(tmp_path / "ddp"), "batch": 8, "n": 100, "epochs": 1, "metric": "auc"})
    gathered = json.loads((tmp_path / "ddp" / "result.json").read_text())["metrics"]
    trainer = single(toy, tmp_path / "one", batch=16, n=100, epochs=1, metric="auc")
    trainer.model.load_state_dict(load_file(str(tmp_path / "ddp" / "run" / "last" / "model.safetensors")))
    expected = trainer.evaluate()
    assert gathered["samples"] == expected["samples"] == 25
    assert gathered["auc"] == pytest.approx(expected["auc"], abs=1e-9)


def test_batchnorm_statistics_agree_across_ranks_and_with_the_checkpoint(tmp_path, toy):
    # Each rank sees its own half of the data; the epoch ends with the ranks' running statistics averaged, so
    # every rank evaluates, and rank zero saves, the same BatchNorm state.
    torchrun(tmp_path / "ddp", {"out": str(tmp_path / "ddp"), "batch": 8, "n": 100, "epochs": 1, "norm": True})
    result = json.loads((tmp_path / "ddp" / "result.json").read_text())
    assert result["buffer_spread"] == 0.0
    trainer = toy.make_trainer(tmp_path / "one", data=toy.BlobData(n=100, batch_size=16), max_epochs=1,
                               task=toy.ToyTask(norm=True, dropout=0.0))
    trainer.setup()
    trainer.model.load_state_dict(load_file(str(tmp_path / "ddp" / "run" / "last" / "model.safetensors")))
    assert trainer.evaluate()["acc"] == pytest.approx(result["metrics"]["acc"], abs=1e-9)


def test_resume_with_another_world_size(tmp_path, toy):
    out = tmp_path / "run_dir"
    torchrun(out, {"out": str(out), "batch": 8, "epochs": 3, "stop_after": 1})
    assert ckpt.read_meta(out / "run" / "last")["epoch"] == 1
    trainer = single(toy, out, batch=16, epochs=3, resume=True)
    assert [r["epoch"] for r in trainer.history] == [1, 2, 3]
    torchrun(out, {"out": str(out), "batch": 8, "epochs": 4, "resume": True})
    assert ckpt.read_meta(out / "run" / "last")["epoch"] == 4


def test_a_killed_worker_is_restarted_and_resumes(tmp_path):
    out = tmp_path / "restart"
    proc = torchrun(out, {"out": str(out), "batch": 8, "epochs": 3, "die": True}, extra=("--max-restarts=1",))
    assert ckpt.read_meta(out / "run" / "last")["epoch"] == 3
    assert "resuming from" in proc.stdout + proc.stderr
    assert json.loads((out / "result.json").read_text())["history"] == 3


def test_two_nodes_on_localhost_rendezvous_and_match_one_process(tmp_path, toy):
    port, script = _free_port(), _script(tmp_path)
    args = json.dumps({"out": str(tmp_path / "nodes"), "batch": 8})
    procs = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1",
                               f"--node-rank={rank}", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
                               "--rdzv-id=oarkit-test", str(script), args],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env())
             for rank in (0, 1)]
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(o[-2000:] for o in outputs)
    single(toy, tmp_path / "one", batch=16)
    _assert_same_weights(tmp_path / "nodes", tmp_path / "one")
