"""Quantization-aware training inside the normal Trainer, through torchao's PT2E flow.

The ``quant=qat`` config group instantiates :class:`QuantizationAwareTraining`; the config builder asks it to
wrap the kit's task (:class:`QATTask`) and adds its callbacks. The Trainer sees an ordinary task whose model
happens to be fake-quantized, and does not know it:

1. ``QATTask.setup`` builds the kit's model, loads the float checkpoint, fuses re-parameterizable blocks,
   exports the kit's deploy wrapper with a dynamic batch and prepares it with the backend's QAT quantizer.
2. The Trainer fine-tunes it for ``trainer.max_epochs`` epochs; checkpoints hold the fake-quant state.
3. :class:`QATExport` (``on_fit_end``) rebuilds the prepared graph, loads ``best/``, converts it to int8 and
   runs the export pipeline: int8 ONNX (and ``.pte`` where executorch is installed), each verified, with the
   metric delta measured against the float checkpoint.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from oarkit.core.engine.callbacks import Callback
from oarkit.core.engine.task import DataModule, DeploySpec, Task, TaskWrapper
from oarkit.core.errors import ConfigError
from oarkit.core.export.prepare import dynamic_shapes, reparameterize, traceable_inputs
from oarkit.core.quant import pt2e

if TYPE_CHECKING:
    from oarkit.core.engine.trainer import Trainer

logger = logging.getLogger(__name__)


class QATTask(TaskWrapper):
    """A kit's task whose model is the PT2E fake-quantized graph of its deploy wrapper.

    Args:
        task: the kit's task.
        checkpoint: the float run (or model directory) to fine-tune from.
        backend: the quantizer (see :mod:`oarkit.core.quant.pt2e`): ``onnxruntime`` (uint8 activations, int8
            per-channel weights, every convolution an int8 kernel in onnxruntime), ``x86`` or ``xnnpack``.
    """

    def __init__(self, task: Task, *, checkpoint: str | Path, backend: str = "onnxruntime") -> None:
        if backend not in pt2e.BACKENDS:
            raise ConfigError(f"quant.backend={backend!r} is not one of {list(pt2e.BACKENDS)}")
        super().__init__(task)
        self.checkpoint = Path(checkpoint)
        self.backend = backend
        self.float_model: nn.Module | None = None

    def setup(self, data: DataModule) -> nn.Module:
        from oarkit.core.engine.checkpoint import checkpoint_folder, read_meta, restore_pruned
        from oarkit.core.hub import load_state_dict, read_state_dict

        model = self.inner.setup(data)
        folder = checkpoint_folder(self.checkpoint, "quant.checkpoint")
        restore_pruned(model, read_meta(folder), source=str(folder))
        load_state_dict(model, read_state_dict(folder), source=str(folder))
        self.float_model = model.eval()
        logger.info("quantization-aware training from %s (%s quantizer)", folder, self.backend)
        return self.prepare(model)

    def prepare(self, model: nn.Module) -> torch.fx.GraphModule:
        """The fake-quantized graph of ``model``'s deploy wrapper (``model`` itself is left as it is)."""
        fused = copy.deepcopy(model).eval()
        reparameterize(fused)
        spec = self.inner.deploy_spec(fused)
        prepared = pt2e.prepare_qat(spec.module, traceable_inputs(spec), dynamic_shapes(spec), backend=self.backend)
        prepared.oarkit_name = getattr(model, "oarkit_name", None)
        prepared.oarkit_kwargs = getattr(model, "oarkit_kwargs", {})
        return prepared

    def validation_step(self, model: nn.Module, batch: Any) -> Any:
        with pt2e.observers_paused(model):  # validation images must not move the learned ranges
            return self.inner.validation_step(model, batch)

    @property
    def scheme(self) -> dict[str, Any]:
        return {"method": "qat", "tool": f"torchao PT2E ({self.backend} quantizer)", "backend": self.backend,
                "activations": "int8" if self.backend == "xnnpack" else "uint8", "weights": "int8", "per_channel": True,
                "checkpoint": str(self.checkpoint)}

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """Convert a trained prepared graph to int8 and describe it for export (``model`` is consumed)."""
        if self.float_model is None:
            raise ConfigError("QATTask.deploy_spec() needs setup() first (it reads labels and preprocessing)")
        converted = pt2e.convert(model, int32_bias=self.backend == "onnxruntime")
        converted.oarkit_quantization = self.scheme
        converted.oarkit_name = getattr(model, "oarkit_name", None)
        inner = self.inner.deploy_spec(self.float_model)
        return dataclasses.replace(inner, module=converted)  # the inner spec's shapes, comparators and wrapper

    def meta(self) -> dict[str, Any]:
        return {**self.inner.meta(), "quant": self.scheme}



class FreezeQuantObservers(Callback):
    """From epoch ``epoch`` on, keep the learned quantization ranges fixed (observers off, fake-quant on)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def on_train_epoch_start(self, trainer: Trainer, epoch: int) -> None:
        if epoch >= self.epoch:
            from torchao.quantization.pt2e import disable_observer

            trainer.model.apply(disable_observer)


class QATExport(Callback):
    """At the end of training: convert ``best/`` to int8 and export it to ``formats`` under ``<run>/export``."""

    def __init__(self, formats: Sequence[str] = ("onnx",), *, verify: bool = True) -> None:
        self.formats = list(formats)
        self.verify = verify
        self.report: Any = None

    def on_fit_end(self, trainer: Trainer) -> None:
        from oarkit.core.engine.checkpoint import read_meta
        from oarkit.core.export import ExportSource, export
        from oarkit.core.hub import load_state_dict, read_state_dict

        task = trainer.task
        if not isinstance(task, QATTask) or task.float_model is None:
            raise ConfigError("QATExport works with the quant=qat config group (a QATTask), not on its own")
        best = trainer.output_dir / "best"
        if not best.exists():
            logger.warning("no best/ checkpoint to convert; skipping the int8 export")
            return
        prepared = task.prepare(task.float_model)
        load_state_dict(prepared, read_state_dict(best), source=str(best))
        prepared.eval()
        data = trainer.data
        source = ExportSource(task=task, model=prepared, origin=str(best), output_dir=trainer.output_dir / "export",
                              meta=read_meta(best), data_root=str(getattr(data, "root", "") or "") or None,
                              dataset=lambda root, split: data.val_dataset() if split == "val" else None,
                              baseline=task.float_model)
        self.report = export(source, self.formats, verify=self.verify)
        path = trainer.output_dir / "export" / "report.md"
        trainer.artifacts["int8_export"] = str(path)
        logger.info("int8 export of the QAT model:\n%s", self.report.table())


def default_qat_formats(backend: str) -> list[str]:
    """ONNX always; ExecuTorch too for the xnnpack scheme, when executorch is installed."""
    import importlib.util

    formats = ["onnx"]
    if backend == "xnnpack" and importlib.util.find_spec("executorch") is not None:
        formats.append("executorch")
    return formats


class QuantizationAwareTraining:
    """The ``quant=qat`` config group: fine-tune a float checkpoint with fake quantization, export int8.

    Args:
        checkpoint: the float run directory (or its ``best/``) to start from.
        backend: ``onnxruntime`` (uint8 activations, int8 per-channel weights, each convolution's output quantized:
            the graph onnxruntime runs with int8 kernels), ``x86`` (torchao's inductor scheme, for ``pt2`` under
            ``torch.compile``) or ``xnnpack`` (int8 activations, for ExecuTorch on ARM).
        export: formats the converted int8 model is exported to at the end (``onnx``, ``executorch``, ``pt2``,
            ``openvino``); folders get an ``_int8`` suffix. ``None``: ONNX, plus ``.pte`` for the xnnpack
            backend where executorch is installed (XNNPACK does not run the x86 scheme's uint8 activations).
        freeze_observers_epoch: from this epoch (0-based) on, quantization ranges stop moving (None: never).
        verify: verify every exported artifact.
    """

    def __init__(self, *, checkpoint: str, backend: str = "onnxruntime", export: Sequence[str] | None = None,
                 freeze_observers_epoch: int | None = None, verify: bool = True) -> None:
        from oarkit.core.export import get_format

        if backend not in pt2e.BACKENDS:
            raise ConfigError(f"quant.backend={backend!r} is not one of {list(pt2e.BACKENDS)}")
        if export is None:
            export = default_qat_formats(backend)
        for name in export:
            if get_format(name).quantized:
                raise ConfigError(f"quant.export lists {name!r}: name the float format ({name.removesuffix('_int8')!r})"
                                  "; the QAT model is already int8")
        self.checkpoint, self.backend = checkpoint, backend
        self.export = [str(f) for f in export]
        self.freeze_observers_epoch = freeze_observers_epoch
        self.verify = verify

    def wrap_task(self, task: Task) -> QATTask:
        """The kit's task, fine-tuned under fake quantization."""
        return QATTask(task, checkpoint=self.checkpoint, backend=self.backend)

    def callbacks(self) -> list[Callback]:
        """The callbacks the run needs: the optional observer freeze and the final int8 export."""
        out: list[Callback] = []
        if self.freeze_observers_epoch is not None:
            out.append(FreezeQuantObservers(self.freeze_observers_epoch))
        if self.export:
            out.append(QATExport(self.export, verify=self.verify))
        return out
