"""What the export pipeline needs from the text kit: the model, its task in positional form, and its datasets.

The core pipeline feeds graphs positional tensors and reads a task's batches as ``(inputs..., targets)`` tuples,
while text batches are dicts (token ids, masks, and the offsets and gold spans the metrics need).
:class:`PositionalTextTask` bridges the two: its batches are ``(input_ids, attention_mask[, token_type_ids],
batch)`` and its ``validation_step`` calls any model - the eager one, the export wrapper or a deployed artifact -
through the same positional signature, so the metric of an artifact is computed by the very code that scores the
eager model.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset
from transformers import PreTrainedModel
from transformers.modeling_outputs import QuestionAnsweringModelOutput

from oarkit.core.engine.metric import Metric
from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import OarkitError
from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.nlp.data.module import TextDataModule
from oarkit.nlp.deploy import FlatOutputs
from oarkit.nlp.evaluate import rebuild_data
from oarkit.nlp.models.uie import UIE
from oarkit.nlp.tasks import TASKS, TransformerTask
from oarkit.nlp.tokenizer import tokenizer_from_spec


class _LastItemMetric(Metric):
    """A text metric fed positional batches: it scores against the batch dict that ends each tuple."""

    def __init__(self, inner: Metric) -> None:
        self.inner = inner
        self.main_indicator, self.higher_is_better = inner.main_indicator, inner.higher_is_better
        self.tie_breaker, self.tie_breaker_higher_is_better = inner.tie_breaker, inner.tie_breaker_higher_is_better
        super().__init__()

    def reset(self) -> None:
        self.inner.reset()

    @property
    def state(self) -> dict[str, torch.Tensor]:  # type: ignore[override]
        return self.inner.state

    @state.setter
    def state(self, value: dict[str, torch.Tensor]) -> None:
        if hasattr(self, "inner"):
            self.inner.state = value

    def update(self, outputs: Any, batch: Any) -> None:
        self.inner.update(outputs, batch[-1])

    def compute(self) -> dict[str, Any]:
        return self.inner.compute()


class PositionalTextTask(Task):
    """A set-up text task whose batches and model calls are positional (see the module docstring).

    Args:
        task: the text task, attached to its tokenizer and labels.
    """

    def __init__(self, task: TransformerTask) -> None:
        self.task = task
        self.task_id = task.task_id
        self.labels = task.labels

    def setup(self, data: Any) -> nn.Module:
        raise OarkitError("PositionalTextTask serves export and evaluation; train with the text task itself")

    def collate(self, samples: list[Any]) -> tuple[Any, ...]:
        batch = self.task.collate(samples)
        names = ["input_ids", "attention_mask"] + (["token_type_ids"] if self.task.uses_token_types else [])
        return (*(batch[n] for n in names), batch)

    def outputs(self, model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Any:
        """The model's outputs on positional inputs, as the text metrics take them."""
        # transformers models (and UIE) take keywords; export wrappers and deployed artifacts take positions.
        flat = FlatOutputs(model, self.task.outputs) if isinstance(model, (PreTrainedModel, UIE)) else model
        out = flat(*inputs)
        if self.task.outputs == ("logits",):
            return out.float()
        start, end = out
        return QuestionAnsweringModelOutput(start_logits=start.float(), end_logits=end.float())

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        raise OarkitError("PositionalTextTask serves export and evaluation; train with the text task itself")

    def validation_step(self, model: nn.Module, batch: Any) -> Any:
        return self.outputs(model, tuple(batch[:-1]))

    def build_metric(self) -> Metric:
        return _LastItemMetric(self.task.build_metric())

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        return self.task.example_inputs()

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        return self.task.deploy_spec(model)

    def meta(self) -> dict[str, Any]:
        return self.task.meta()


def _dataset(root: str, split: str, *, meta: dict[str, Any], config: Any, tokenizer: Any) -> Dataset | None:
    """A split's features, one per item (not bucketed: the pipeline batches them itself)."""
    data: TextDataModule | None = rebuild_data(meta, config, root or None)
    if data is None:
        return None
    data.bucket, data.batch_size = False, data.examples_per_batch
    data.configure(tokenizer=tokenizer)
    split = "dev" if split == "val" else split
    return data.dataset(split, train=False) if data.has_split(split) else None


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    meta, config = trained.meta, trained.config
    task_cls = TASKS.get(meta.get("nlp_task", ""))
    if task_cls is None:
        raise OarkitError(f"{trained.folder}/meta.json names no text task (nlp_task={meta.get('nlp_task')!r})")
    task = trained.task(TransformerTask, task_cls)
    tokenizer = tokenizer_from_spec(meta["preprocessing"]["tokenizer"])
    task.attach(tokenizer, labels=meta.get("labels", []), preprocessing=meta.get("preprocessing", {}),
                data_meta={k: meta[k] for k in ("pair", "prompt_lang", "schema") if k in meta})
    return ExportSource(task=PositionalTextTask(task), model=trained.model, origin=str(trained.folder),
                        output_dir=trained.output_dir, meta=meta, data_root=trained.data_config().get("root"),
                        dataset=functools.partial(_dataset, meta=meta, config=config, tokenizer=tokenizer),
                        calibration_split="train", validation_split="val")


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A text run or model directory, ready for :func:`oarkit.core.export.export`.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last`` or a model directory trained with oarkit.
        pretrained: unused: text models are exported from trained runs only, because a text head without
            fine-tuned weights and labels has nothing to deploy.
    """
    return resolve_export_source(source, from_model_dir=_from_model_dir)
