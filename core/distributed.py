"""Distributed training through torchrun: process-group set-up, model wrapping (DDP / FSDP2), reductions.

No launcher of our own: ``torchrun --nproc_per_node=N tools/train.py -c FILE`` sets RANK, WORLD_SIZE and
LOCAL_RANK, and the Trainer joins the group from them. A plain ``python tools/train.py`` is world size 1 and
touches nothing here beyond :func:`context`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import Sampler

from oarkit.core.errors import ConfigError

logger = logging.getLogger(__name__)

STRATEGIES = ("ddp", "fsdp")


@dataclass(frozen=True)
class DistContext:
    """Where this process stands: rank, world size, local rank, the backend, and the device it should use."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str = ""

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def env_world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def context(device: torch.device) -> DistContext:
    """Join the torchrun process group when there is one (gloo on CPU, nccl on CUDA) and describe it."""
    if env_world_size() <= 1:
        return DistContext()
    missing = [k for k in ("MASTER_ADDR", "MASTER_PORT", "RANK") if k not in os.environ]
    if missing:
        raise ConfigError(f"WORLD_SIZE={env_world_size()} but {', '.join(missing)} not set: launch distributed runs "
                          "with torchrun --nproc_per_node=N tools/train.py ...")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, store=_attempt_store(), rank=int(os.environ["RANK"]),
                                world_size=env_world_size())
        logger.debug("joined process group: rank %d of %d (%s)", dist.get_rank(), dist.get_world_size(), backend)
    return DistContext(rank=dist.get_rank(), world_size=dist.get_world_size(),
                       local_rank=int(os.environ.get("LOCAL_RANK", "0")), backend=dist.get_backend())


def _attempt_store() -> dist.Store:
    """The rendezvous store, with keys prefixed by torchrun's restart count.

    After ``--max-restarts`` restarts the workers, the agent's store still holds the previous attempt's gloo
    addresses under the same keys; a restarted rank could read them and fail to connect. A prefix per attempt
    keeps each round's keys apart.
    """
    from datetime import timedelta

    agent_hosts = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), env_world_size(),
                          is_master=not agent_hosts and os.environ.get("RANK") == "0",
                          timeout=timedelta(minutes=10), wait_for_workers=False)
    return dist.PrefixStore(f"oarkit/attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)


def cleanup() -> None:
    """Leave the process group (at the end of a torchrun job)."""
    if dist.is_initialized():
        # Tear down together: a rank that leaves while a peer still flushes can make gloo abort that peer.
        dist.barrier()
        dist.destroy_process_group()


def local_device(device: torch.device) -> torch.device:
    """Under torchrun on GPUs, each process takes the GPU of its local rank."""
    if env_world_size() > 1 and device.type == "cuda" and device.index is None:
        index = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    return device


def all_reduce_sum(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The sum of ``tensor`` over all ranks, returned on the tensor's own device (a no-op without a group)."""
    if not dist.is_initialized():
        return tensor
    work = tensor.detach().to(device).clone()
    dist.all_reduce(work, op=dist.ReduceOp.SUM)
    return work.to(tensor.device)


def all_gather_objects(obj: Any) -> list[Any]:
    if not dist.is_initialized():
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def average_buffers(module: nn.Module, device: torch.device) -> None:
    """Replace every floating-point buffer (BatchNorm running statistics) by its mean over the ranks.

    Each rank updates running statistics on its own shard of the data, so without this the ranks would
    evaluate, and rank zero would save, statistics of a part of the data only.
    """
    if not dist.is_initialized():
        return
    world = dist.get_world_size()
    for buffer in module.buffers():
        if buffer.is_floating_point():
            buffer.copy_(all_reduce_sum(buffer, device) / world)


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


class ShardSampler(Sampler[int]):
    """Every ``world_size``-th index from ``rank``, in order and without padding: each sample is evaluated once,
    so a metric summed over ranks equals the single-process one."""

    def __init__(self, length: int, rank: int, world_size: int) -> None:
        self.indices = list(range(rank, length, world_size))

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def check_strategy(strategy: str, ctx: DistContext, *, sync_batchnorm: bool, ema: bool,
                   device: torch.device) -> None:
    if strategy not in STRATEGIES:
        from oarkit.core.errors import did_you_mean

        hint = did_you_mean(strategy, STRATEGIES)
        raise ConfigError(f"trainer.strategy={strategy!r} is not one of {STRATEGIES}.{hint}")
    if sync_batchnorm and ctx.enabled and device.type != "cuda":
        raise ConfigError("trainer.sync_batchnorm=true needs CUDA devices (torch's SyncBatchNorm has no CPU kernel); "
                          "on CPU use a model without BatchNorm or leave it off")
    if strategy == "fsdp" and ema and ctx.enabled:
        raise ConfigError("trainer.ema_decay with trainer.strategy=fsdp is not supported: the EMA copy would hold "
                          "unsharded weights on every rank; use strategy=ddp or ema_decay=null")


def wrap_model(model: nn.Module, ctx: DistContext, *, strategy: str, sync_batchnorm: bool, precision: str,
               device: torch.device) -> nn.Module:
    """The module the training loop runs: DDP around ``model``, or ``model`` sharded in place by FSDP2."""
    if not ctx.enabled:
        return model
    if strategy == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                  if precision == "bf16" else MixedPrecisionPolicy())
        # Shard each top-level block, then the root: parameters are gathered one block at a time.
        for child in model.children():
            if any(p.requires_grad for p in child.parameters()):
                fully_shard(child, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        return model
    if sync_batchnorm:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)


@contextlib.contextmanager
def gradient_sync(train_model: nn.Module, enabled: bool) -> Iterator[None]:
    """Skip the gradient all-reduce on accumulation micro-batches (DDP ``no_sync``, FSDP2 requires_gradient_sync)."""
    if enabled:
        yield
        return
    if hasattr(train_model, "no_sync"):
        with train_model.no_sync():
            yield
    elif hasattr(train_model, "set_requires_gradient_sync"):
        train_model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            train_model.set_requires_gradient_sync(True)
    else:
        yield


def is_sharded(model: nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def full_model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The whole state dict on the CPU (gathered from the shards under FSDP: every rank must call it)."""
    if is_sharded(model):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    from oarkit.core.engine.checkpoint import contiguous_state

    return contiguous_state(model)


def full_optimizer_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    if is_sharded(model):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        return get_optimizer_state_dict(model, optimizer,
                                        options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return optimizer.state_dict()


def load_full_state(model: nn.Module, optimizer: torch.optim.Optimizer, weights: dict[str, torch.Tensor],
                    optimizer_state: dict[str, Any]) -> None:
    """Load whole (unsharded) model and optimizer states, whatever the current world size and strategy."""
    if is_sharded(model):
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_model_state_dict,
            set_optimizer_state_dict,
        )

        options = StateDictOptions(full_state_dict=True)
        set_model_state_dict(model, weights, options=options)
        set_optimizer_state_dict(model, optimizer, optimizer_state, options=options)
        return
    model.load_state_dict(weights)
    optimizer.load_state_dict(optimizer_state)
