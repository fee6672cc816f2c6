"""Mixed precision through torch.amp: the autocast context and, for fp16 only, a gradient scaler."""

from __future__ import annotations

import contextlib
import logging

import torch

from oarkit.core.errors import ConfigError, did_you_mean

log = logging.getLogger(__name__)

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
#: ``auto`` picks bf16 where the hardware computes it natively and fp32 elsewhere.
CHOICES = (*PRECISIONS, "auto")


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 in hardware (CUDA with bf16, or a CPU with AVX512-BF16 or AMX).

    On CPUs without them oneDNN emulates bf16, which measured up to 18x slower than fp32 (a 2-core AVX2 EPYC).
    """
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """``precision`` itself, or for ``auto`` the precision this device runs fastest without loss scaling."""
    if precision not in CHOICES:
        raise ConfigError(f"trainer.precision={precision!r} is not one of {list(CHOICES)}."
                          f"{did_you_mean(precision, CHOICES)}")
    if precision != "auto":
        return precision
    chosen = "bf16" if native_bf16(device) else "fp32"
    log.info("trainer.precision=auto: %s on %s", chosen, device.type)
    return chosen


class Precision:
    """Autocast and loss scaling for one of ``fp32``, ``bf16``, ``fp16`` or ``auto`` (resolved on ``device``)."""

    def __init__(self, precision: str, device: torch.device) -> None:
        precision = resolve_precision(precision, device)
        self.name = precision
        self.dtype = PRECISIONS[precision]
        self.device_type = device.type
        # Loss scaling guards fp16's narrow exponent; bf16 has fp32's range and needs none.
        self.scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)
