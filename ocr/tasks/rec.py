"""The text-recognition task (``ocr/rec``): a CTC recognizer (with its NRTR or SAR guidance head in training),
validated by greedy CTC decoding, line accuracy, normalised edit distance and CER."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.deploy_spec import Dim, InputSpec
from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import ConfigError
from oarkit.core.export.compare import Probabilities
from oarkit.core.registry import factory_name, model_factory

from ..charset import CharDictionary
from ..data.module import OCRRecData
from ..int8 import DecodedTextAgreement, int8_export_options
from ..losses import CTCLoss, SequenceCELoss
from ..metrics import RecMetric
from ..postprocess.ctc import Decoded, ctc_greedy_decode

logger = logging.getLogger(__name__)

#: the log-probability a teacher's eval output is floored at for distillation (and a character it lacks gets)
LOG_FLOOR = math.log(1e-8)

#: NRTR's special classes (PaddleOCR's NRTRLabelEncode): padding, unknown, start, end; characters follow
NRTR_PAD, NRTR_BOS, NRTR_EOS, NRTR_OFFSET = 0, 2, 3, 3
#: what int8 quantizes of a recognizer: convolutions and the SVTR neck's matrix products. The rest (LayerNorm,
#: softmax, the attention's elementwise ops, the CTC head's Gemm) stays float: quantizing every operator cost
#: PP-OCRv4 mobile 9-12 points of line accuracy on rendered lines, these two cost none at 3.0 MB (fp32 10.8 MB)
INT8_OP_TYPES = ("Conv", "MatMul")
#: the character error rate an int8 export's text may have against eager's (spaces ignored; measured: 0 on
#: rendered lines, though 3-8% of the time steps change their best class, between a character and a blank)
INT8_CER_TOLERANCE = 0.01


class RecExport(nn.Module):
    """Export wrapper: the eval-mode recognizer returning per-step probabilities ``[B, T, C]``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return step_probabilities(self.model(images))


def step_probabilities(outputs: Any) -> torch.Tensor:
    """``[B, T, C]`` probabilities from a recognizer's outputs (eval: already; a training dict: softmax of CTC)."""
    if isinstance(outputs, dict):
        return outputs["ctc"].softmax(dim=2)
    if isinstance(outputs, (tuple, list)):
        return outputs[0]
    return outputs


def guidance_targets(codes: list[list[int]], max_length: int, num_chars: int) -> dict[str, torch.Tensor]:
    """The targets dict the models' training forward takes (see :mod:`oarkit.ocr.models`).

    Args:
        codes: CTC class indices per line (dictionary index + 1).
        max_length: ``L``, the padded label length.
        num_chars: characters in the dictionary (SAR's special classes follow them).
    """
    batch = len(codes)
    label_ctc = torch.zeros(batch, max_length, dtype=torch.long)
    label_gtc = torch.zeros(batch, max_length + 2, dtype=torch.long)
    label_sar = torch.full((batch, max_length + 2), num_chars + 2, dtype=torch.long)
    lengths = torch.zeros(batch, dtype=torch.long)
    for b, line in enumerate(codes):
        line = line[:max_length]
        n = len(line)
        lengths[b] = n
        if n:
            label_ctc[b, :n] = torch.tensor(line)
            label_gtc[b, 1:n + 1] = torch.tensor(line) + NRTR_OFFSET
            label_sar[b, 1:n + 1] = torch.tensor(line) - 1
        label_gtc[b, 0], label_gtc[b, n + 1] = NRTR_BOS, NRTR_EOS
        label_sar[b, 0] = label_sar[b, n + 1] = num_chars + 1
    return {"label_ctc": label_ctc, "length": lengths, "label_gtc": label_gtc, "label_sar": label_sar}


class TextRecognitionTask(Task):
    """CTC text recognition.

    Args:
        model: a registry name (``ocr/ppocrv4_rec_mobile``) or a factory taking ``num_classes``.
        pretrained: load the registered weights (``True``) or a local file; a dictionary of another size keeps
            the backbone and re-initialises the heads.
        guidance_weight: weight of the guidance head's loss (NRTR / SAR) beside CTC (PaddleOCR: 1.0). Fine-tuning
            from Paddle's inference weights, whose guidance head is not released (it starts from random), 0 keeps
            its random gradients out of the trained backbone.
        nrtr_smoothing: label smoothing of the NRTR loss (PaddleOCR: 0.1).
        freeze_norm: keep batch-norm statistics and affine parameters as loaded (small fine-tuning batches of
            one domain would otherwise drag the statistics away from what the weights were trained with).
        channels_last: keep the model's weights in channels-last memory order (PyTorch's CPU backward of the
            5x5 depthwise convolutions of PP-LCNetV3 is about 20x slower in the default order); checkpoints
            are saved contiguous either way.
    """

    task_id = "ocr/rec"

    def __init__(self, model: str | Callable[..., nn.Module] = "ocr/ppocrv4_rec_mobile", *,
                 pretrained: bool | str = False, guidance_weight: float = 1.0, nrtr_smoothing: float = 0.1,
                 freeze_norm: bool = False, channels_last: bool = False) -> None:
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.ctc = CTCLoss()
        self.guidance_weight = float(guidance_weight)
        self.freeze_norm = bool(freeze_norm)
        self.channels_last = bool(channels_last)
        self.nrtr_loss = SequenceCELoss(ignore_index=NRTR_PAD, smoothing=nrtr_smoothing)
        self.dictionary: CharDictionary | None = None
        self.teacher_columns: torch.Tensor | None = None  # a distillation teacher's class per student class
        self.preprocessing: dict[str, Any] = {}

    @property
    def model_name(self) -> str | None:
        return factory_name(self.model_factory)

    def setup(self, data: OCRRecData) -> nn.Module:
        if data.dictionary_name is None:  # the model's own dictionary
            model = self.model_factory()
            dictionary = CharDictionary.of_model(model)
            data.configure(dictionary=dictionary, height=getattr(model, "image_height", None))
        else:
            dictionary = data.dictionary
            model = self.model_factory(num_classes=dictionary.num_classes)
            data.configure(height=getattr(model, "image_height", None))
        if self.freeze_norm:
            for module in model.modules():
                if isinstance(module, nn.modules.batchnorm._BatchNorm):
                    module.requires_grad_(False)
        classes = getattr(model, "num_classes", dictionary.num_classes)
        if classes != dictionary.num_classes:
            raise ConfigError(f"the recognizer has {classes} classes but the dictionary {dictionary.name!r} has "
                              f"{dictionary.num_classes} (blank included); set data.dictionary and "
                              "data.use_space_char to the model's, or let the model take the data's")
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        self.dictionary = dictionary
        self.preprocessing = data.preprocess.to_dict()
        logger.info("recognizer %s, %d classes (%.2fM parameters)", self.model_name or type(model).__name__,
                    dictionary.num_classes, sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def restore(self, meta: dict[str, Any]) -> None:
        if not meta.get("dictionary"):
            raise ConfigError("meta.json has no dictionary, so the recognizer cannot decode; retrain it with "
                              "tools/train.py, which records it")
        self.dictionary = CharDictionary.from_dict(meta["dictionary"])
        self.preprocessing = dict(meta.get("preprocessing") or {})

    def configure_data(self, data: OCRRecData) -> None:
        data.use_trained(self.preprocessing, self.dictionary)

    def default_data(self, root: str) -> OCRRecData:
        return OCRRecData(root=root)

    # -- steps ------------------------------------------------------------------------------------------------
    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        if self.freeze_norm:  # the Trainer puts the model in training mode; the statistics stay as loaded
            for module in model.modules():
                if isinstance(module, nn.modules.batchnorm._BatchNorm):
                    module.eval()
        out = model(batch["image"], batch["targets"])
        if not isinstance(out, dict) or "ctc" not in out:
            raise ConfigError(f"{type(model).__name__} in training mode must return {{'ctc': logits, ...}}")
        targets = batch["targets"]
        loss_ctc = self.ctc(out["ctc"], targets["label_ctc"], targets["length"])
        logs = {"loss_ctc": loss_ctc.detach()}
        total = loss_ctc
        if "nrtr" in out and self.guidance_weight:
            loss_g = self.nrtr_loss(out["nrtr"], targets["label_gtc"][:, 1:])
            logs["loss_nrtr"] = loss_g.detach()
            total = total + self.guidance_weight * loss_g
        if "sar" in out and self.guidance_weight:
            pad = self.dictionary.num_classes + 1 if self.dictionary else 0  # chars + <UKN>, <BOS/EOS>, <PAD>
            loss_g = SequenceCELoss(ignore_index=pad)(out["sar"][:, :-1], targets["label_sar"][:, 1:])
            logs["loss_sar"] = loss_g.detach()
            total = total + self.guidance_weight * loss_g
        return {"loss": total, **logs}

    def decode(self, probs: torch.Tensor) -> list[Decoded]:
        """Greedy CTC decoding with the task's dictionary."""
        return ctc_greedy_decode(probs, self.dictionary)

    def validation_step(self, model: nn.Module, batch: Any) -> list[Decoded]:
        return self.decode(step_probabilities(model(batch["image"])))

    def prepare_distill_teacher(self, teacher: nn.Module, meta: dict[str, Any]) -> None:
        """Read a teacher of another dictionary (PP-OCRv6 small's, for a student on tiny's or on English) through
        this task's: each student class takes the teacher's column of the same character, and a character the
        teacher lacks gets no teacher probability (:meth:`align_distill_logits`).

        Raises:
            ConfigError: the teacher's dictionary is unknown, or shares under half of the student's characters.
        """
        self.teacher_columns = None
        if self.dictionary is None:
            raise ConfigError("distillation of a recognizer needs its dictionary: set the task up first")
        if meta.get("dictionary"):
            theirs = CharDictionary.from_dict(meta["dictionary"])
        elif getattr(teacher, "character_dict", None):
            theirs = CharDictionary.of_model(teacher)
        else:
            return  # a teacher of unknown dictionary: kd_loss checks the class counts agree
        if theirs.characters == self.dictionary.characters:
            return
        columns = self.dictionary.columns_in(theirs)
        found = sum(c is not None for c in columns[1:])
        if found < len(columns[1:]) / 2:
            raise ConfigError(f"the teacher reads the dictionary {theirs.name!r} ({theirs.num_classes} classes), "
                              f"which holds {found} of the student's {len(columns) - 1} characters "
                              f"({self.dictionary.name!r}): too few to distill from; give a teacher trained on this "
                              "dictionary")
        self.teacher_columns = torch.tensor([-1 if c is None else c for c in columns])
        logger.info("distill: the teacher's %d classes (%s) read through the student's %d (%s): %d of %d characters "
                    "found, the rest get no teacher probability", theirs.num_classes, theirs.name,
                    self.dictionary.num_classes, self.dictionary.name, found, len(columns) - 1)

    def align_distill_logits(self, student: torch.Tensor, teacher: torch.Tensor,
                             dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The teacher's columns in the student's dictionary (:meth:`prepare_distill_teacher`; a column the teacher
        lacks gets the log-probability floor of :meth:`distill_logits`, ``log 1e-8``); and PP-LCNetV3 recognizers
        pool a line to 40 steps in training and to width / 8 steps in eval (Paddle's backbone does the same): the
        teacher's eval steps are resampled to the student's count."""
        columns = self.teacher_columns
        if columns is not None:
            columns = columns.to(teacher.device)
            picked = teacher.index_select(-1, columns.clamp_min(0))
            teacher = torch.where(columns >= 0, picked, torch.full_like(picked, LOG_FLOOR))
        if student.shape[1] != teacher.shape[1] and student.shape[0] == teacher.shape[0]:
            teacher = nn.functional.interpolate(teacher.transpose(1, 2), size=student.shape[1], mode="linear",
                                                align_corners=False).transpose(1, 2)
        return student, teacher

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        """The CTC logits ``[B, T, C]`` (a training dict's ``ctc``; an eval output's probabilities as their logs):
        PP-OCR's CML distills the CTC head; guidance heads train on labels only."""
        if isinstance(outputs, dict):
            return [(outputs["ctc"], -1)]
        return [(step_probabilities(outputs).float().clamp_min(math.exp(LOG_FLOOR)).log(), -1)]

    def build_metric(self) -> RecMetric:
        return RecMetric()

    def collate(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        max_length = int(self.preprocessing.get("max_text_length", 25))
        num_chars = (self.dictionary.num_classes - 1) if self.dictionary else 0
        return {"image": torch.stack([s["image"] for s in samples]), "texts": [s["text"] for s in samples],
                "targets": {**guidance_targets([s["codes"] for s in samples], max_length, num_chars),
                            "valid_ratio": torch.tensor([s["valid_ratio"] for s in samples], dtype=torch.float32)}}

    def export_inputs(self, batch: Any) -> tuple[torch.Tensor, ...]:
        return (batch["image"],)

    # -- export, metadata ---------------------------------------------------------------------------------------
    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        p = self.preprocessing
        return (torch.randn(1, 3, int(p.get("height", 48)), int(p.get("width", 320))),)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """Per-step probabilities with dynamic batch and width (multiples of 8, 16..2048) at the model's height; an
        int8 artifact is held to the text greedy decoding reads from them (:mod:`oarkit.ocr.int8`).

        Prepares ``model`` in place for inference: folded, and without its training-only guidance head (which
        would otherwise ride along as unused weights in formats that keep every parameter, such as ``.pt2``).
        """
        if hasattr(model, "reparameterize"):
            model.reparameterize()
        if hasattr(model, "drop_guidance"):
            model.drop_guidance()
        return DeploySpec(
            module=RecExport(model).eval(), example_inputs=self.example_inputs(), input_names=["images"],
            output_names=["probabilities"],
            inputs=[InputSpec("images", [Dim("batch", 1, 64), 3, None, Dim("width", 16, 2048, multiple=8)])],
            output_axes={"probabilities": {0: "batch", 1: "steps"}},
            compare=Probabilities(["probabilities"]),
            quantized_compare=DecodedTextAgreement("probabilities", dictionary=self.dictionary,
                                                   tolerance=INT8_CER_TOLERANCE) if self.dictionary else None,
            export_options=int8_export_options(INT8_OP_TYPES),
            preprocessing=self.preprocessing,
            postprocessing={"decode": "ctc_greedy", "dictionary": self.dictionary.to_dict() if self.dictionary else {}},
            labels=[])

    def meta(self) -> dict[str, Any]:
        return {"preprocessing": self.preprocessing,
                "dictionary": self.dictionary.to_dict() if self.dictionary else None}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from ..pipeline.ocr import OCR

        return OCR(rec=model, rec_preprocess=self.preprocessing, dictionary=self.dictionary, **kwargs)
