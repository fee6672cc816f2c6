"""OCR datasets: detection pages with DB targets, recognition lines with encoded labels, orientation lines.

Samples are dicts; the tasks' ``collate`` stack them. Training augmentation is seeded from ``(seed, epoch,
index)``, so a sample looks the same whichever worker loads it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from oarkit.core.data import read_image, sample_seed
from oarkit.core.errors import DataError

from ..charset import CharDictionary
from ..render.renderer import TextInstance
from .db_targets import db_targets
from .formats import LMDBRecSet
from .transforms import HALF, IMAGENET_MEAN, IMAGENET_STD, color_jitter, crop_keeping_text, det_augment, det_resize, \
    normalize, rec_augment, rec_tensor


@dataclass
class DetPreprocess:
    """How detection images become model inputs (recorded in meta.json and deploy.yaml).

    Attributes:
        mean, std: per-channel normalisation of ``x / 255`` (BGR order when ``bgr``).
        bgr: feed channels as OpenCV decodes them (PaddleOCR's models expect it).
        limit_side_len, limit_type: evaluation resize (:func:`~oarkit.ocr.data.transforms.det_resize`).
        crop_size: training crop ``[height, width]``.
    """

    mean: Sequence[float] = IMAGENET_MEAN
    std: Sequence[float] = IMAGENET_STD
    bgr: bool = True
    limit_side_len: int = 960
    limit_type: str = "max"
    crop_size: Sequence[int] = (640, 640)

    def to_dict(self) -> dict[str, Any]:
        return {"mean": list(self.mean), "std": list(self.std), "bgr": self.bgr, "limit_side_len": self.limit_side_len,
                "limit_type": self.limit_type, "crop_size": list(self.crop_size)}


@dataclass
class RecPreprocess:
    """How text lines become recognizer inputs.

    Attributes:
        height: the model's input height.
        width: the padded width of training and evaluation batches (PaddleOCR: 320).
        mean, std, bgr: as :class:`DetPreprocess`.
        max_text_length: longer labels are dropped in training (PaddleOCR: 25).
    """

    height: int = 48
    width: int = 320
    mean: Sequence[float] = HALF
    std: Sequence[float] = HALF
    bgr: bool = True
    max_text_length: int = 25

    def to_dict(self) -> dict[str, Any]:
        return {"height": self.height, "width": self.width, "mean": list(self.mean), "std": list(self.std),
                "bgr": self.bgr, "max_text_length": self.max_text_length}


@dataclass
class DetAugment:
    """Detection training augmentation (PaddleOCR's defaults)."""

    scale: Sequence[float] = (0.5, 3.0)
    rotate: float = 10.0
    hflip: float = 0.5
    color: float = 0.3
    shrink_ratio: float = 0.4
    min_text_size: int = 8
    extra: dict[str, Any] = field(default_factory=dict)


class DetDataset(Dataset):
    """Detection pages: training crops with DB targets, or evaluation images resized by the limit side.

    Args:
        samples: ``(image path, [TextInstance])`` pairs (:mod:`.formats` reads them).
        preprocess: normalisation and sizes.
        train: augment and make DB targets (else: resize, keep the ground truth in source coordinates).
        augment: training augmentation settings.
        seed: augmentation seed.
    """

    def __init__(self, samples: Sequence[tuple[str, list[TextInstance]]], preprocess: DetPreprocess, *,
                 train: bool, augment: DetAugment | None = None, seed: int = 0) -> None:
        self.samples = list(samples)
        self.preprocess, self.train = preprocess, bool(train)
        self.augment = augment or DetAugment()
        self.seed, self.epoch = int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.samples)

    def input_size(self, index: int) -> tuple[int, int]:
        """The evaluation input ``(height, width)`` of a sample, read from the image header."""
        with Image.open(self.samples[index][0]) as im:
            w, h = im.size
        dummy = np.zeros((h, w, 1), np.uint8)
        resized, _, _ = det_resize(dummy, limit_side_len=self.preprocess.limit_side_len,
                                   limit_type=self.preprocess.limit_type)
        return resized.shape[:2]

    def __getitem__(self, index: int) -> dict[str, Any]:
        path, instances = self.samples[index]
        image = read_image(path)
        polys = [np.asarray(i.points, np.float32) for i in instances]
        ignores = [i.ignore for i in instances]
        p = self.preprocess
        if not self.train:
            resized, _, _ = det_resize(image, limit_side_len=p.limit_side_len, limit_type=p.limit_type)
            return {"image": normalize(resized, p.mean, p.std, bgr=p.bgr), "polys": polys, "ignores": ignores,
                    "texts": [i.text for i in instances], "source_size": image.shape[:2], "path": path}
        rng = random.Random(sample_seed(self.seed, self.epoch, index))
        a = self.augment
        image, polys = det_augment(image, polys, rng, scale=a.scale, rotate=a.rotate, hflip=a.hflip)
        image, polys, ignores = crop_keeping_text(image, polys, ignores, rng, size=tuple(p.crop_size))
        image = color_jitter(image, rng, a.color)
        h, w = image.shape[:2]
        targets = db_targets(polys, ignores, h, w, shrink_ratio=a.shrink_ratio, min_text_size=a.min_text_size)
        return {"image": normalize(image, p.mean, p.std, bgr=p.bgr),
                **{k: torch.from_numpy(v) for k, v in targets.items()}}


class RecDataset(Dataset):
    """Recognition lines with CTC (and guidance-head) labels.

    An index may be an ``int`` or ``(index, width)`` from the multi-scale sampler, which sets the padded width
    of the batch.

    Args:
        samples: ``(image path, label)`` pairs, or an :class:`~.formats.LMDBRecSet`.
        dictionary: the recognizer's classes.
        preprocess: height, width, normalisation.
        train: augment lines and drop labels the dictionary cannot encode or that are too long.
        augment_prob: the probability of each augmentation.
        seed: augmentation seed.
    """

    def __init__(self, samples: Sequence[tuple[str, str]] | LMDBRecSet, dictionary: CharDictionary,
                 preprocess: RecPreprocess, *, train: bool, augment_prob: float = 0.4, seed: int = 0) -> None:
        self.samples = samples
        self.dictionary, self.preprocess, self.train = dictionary, preprocess, bool(train)
        self.augment_prob = float(augment_prob)
        self.seed, self.epoch = int(seed), 0
        self.indices = list(range(len(samples)))
        if train and not isinstance(samples, LMDBRecSet):
            self.indices = [i for i, (_, label) in enumerate(samples)
                            if 0 < len(dictionary.encode(label)) <= preprocess.max_text_length]
            if not self.indices:
                raise DataError(f"no training line has a label the dictionary {dictionary.name!r} encodes within "
                                f"{preprocess.max_text_length} characters")

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.indices)

    def load(self, index: int) -> tuple[np.ndarray, str]:
        """The RGB line image and label of sample ``index``."""
        if isinstance(self.samples, LMDBRecSet):
            data, label = self.samples.get(self.indices[index])
            image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            if image is None:
                raise DataError(f"{self.samples.path}: sample {index + 1} is not a decodable image")
            return cv2.cvtColor(image, cv2.COLOR_BGR2RGB), label
        path, label = self.samples[self.indices[index]]
        return read_image(path), label

    def aspect_ratios(self) -> list[float]:
        """Width over height of every line, read from image headers (the multi-scale sampler's bins)."""
        if isinstance(self.samples, LMDBRecSet):
            return [1.0] * len(self)
        out = []
        for i in self.indices:
            with Image.open(self.samples[i][0]) as im:
                out.append(im.size[0] / max(1, im.size[1]))
        return out

    def __getitem__(self, item: int | tuple[int, int]) -> dict[str, Any]:
        index, width = (item, self.preprocess.width) if isinstance(item, int) else (int(item[0]), int(item[1]))
        image, label = self.load(index)
        if self.train:
            image = rec_augment(image, random.Random(sample_seed(self.seed, self.epoch, index)),
                                prob=self.augment_prob)
        p = self.preprocess
        tensor, valid_ratio = rec_tensor(image, height=p.height, width=width, mean=p.mean, std=p.std, bgr=p.bgr)
        codes = self.dictionary.encode(label)[: p.max_text_length]
        return {"image": tensor, "codes": codes, "text": label, "valid_ratio": valid_ratio}


class ClsDataset(Dataset):
    """Text-line orientation (0 or 180 degrees): lines from a recognition set, half of them turned upside down.

    Training turns each line with probability one half (seeded per epoch); evaluation turns every other line.
    A list whose labels are ``0``/``180`` is read as given instead.
    """

    def __init__(self, samples: Sequence[tuple[str, str]], *, height: int = 48, width: int = 192,
                 mean: Sequence[float] = HALF, std: Sequence[float] = HALF, bgr: bool = True, train: bool,
                 augment_prob: float = 0.4, seed: int = 0) -> None:
        self.samples = list(samples)
        self.given = all(label in ("0", "180") for _, label in self.samples)
        self.height, self.width, self.mean, self.std, self.bgr = height, width, mean, std, bgr
        self.train, self.augment_prob, self.seed, self.epoch = bool(train), float(augment_prob), int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict[str, Any]:
        path, label = self.samples[index]
        image = read_image(path)
        rng = random.Random(sample_seed(self.seed, self.epoch, index))
        if self.given:
            turned = label == "180"
        else:
            turned = rng.random() < 0.5 if self.train else index % 2 == 1
            if turned:
                image = np.ascontiguousarray(image[::-1, ::-1])
        if self.train:
            image = rec_augment(image, rng, prob=self.augment_prob)
        tensor, _ = rec_tensor(image, height=self.height, width=self.width, mean=self.mean, std=self.std, bgr=self.bgr)
        return {"image": tensor, "label": int(turned)}
