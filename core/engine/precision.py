"""Mixed precision through torch.amp: the autocast context and, for fp16 only, a gradient scaler."""

from __future__ import annotations

import contextlib

import torch

from oarkit.core.errors import ConfigError, did_you_mean

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


class Precision:
    """Autocast and loss scaling for one of ``fp32``, ``bf16`` or ``fp16``."""

    def __init__(self, precision: str, device: torch.device) -> None:
        if precision not in PRECISIONS:
            raise ConfigError(f"trainer.precision={precision!r} is not one of {list(PRECISIONS)}."
                              f"{did_you_mean(precision, PRECISIONS)}")
        self.name = precision
        self.dtype = PRECISIONS[precision]
        self.device_type = device.type
        # Loss scaling guards fp16's narrow exponent; bf16 has fp32's range and needs none.
        self.scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)
