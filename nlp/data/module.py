"""The text DataModules: splits on disk, label names, tokenisation, length-bucketed batches.

A dataset is a folder with one file per split (``train.*``, ``dev.*``, optionally ``test.*``); the task hands the
tokenizer over through :meth:`TextDataModule.configure` before any split is built, reads :attr:`labels` to size
its head, and the Trainer loads the splits. ``batch_size`` in a config means examples per batch; with bucketing on,
each loader item is a whole batch (see :mod:`.bucketing`), so the loader itself is given batches of one.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from oarkit.core.data.doctor import DataInventory
from oarkit.core.engine.task import DataModule
from oarkit.core.errors import ConfigError, DataError
from oarkit.nlp.data.bucketing import LengthBucketedBatches
from oarkit.nlp.data.features import encode_prompts, encode_qa, encode_tagged, encode_texts
from oarkit.nlp.data.inventory import classification_inventory, extraction_inventory, qa_inventory, token_inventory
from oarkit.nlp.data.prompts import prompt_examples, schema_of
from oarkit.nlp.data.readers import read_classification, read_conll, read_doccano, read_label_list, read_squad
from oarkit.nlp.prompts import LANGS, detect_lang

logger = logging.getLogger(__name__)

SPLIT_ALIASES = {"train": ("train",), "dev": ("dev", "val", "validation"), "val": ("dev", "val", "validation"),
                 "test": ("test",)}


class TextDataModule(DataModule):
    """Shared machinery of the text data modules.

    Args:
        root: the dataset folder.
        train_file, dev_file: split files inside ``root`` (found by name and suffix when omitted).
        max_length: the longest tokenised input; longer ones are truncated (QA: windowed).
        batch_size: examples per batch.
        num_workers: loader worker processes.
        bucket: batch examples of similar length together (less padding, faster on the CPU).
        pool_batches: batches per length-sorting pool when bucketing.
        seed: the bucketing / sampling seed.
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`) before training.
    """

    #: file suffixes searched for a split, in order
    suffixes: tuple[str, ...] = ()
    #: the layout, for error messages
    layout: str = ""

    def __init__(self, *, root: str, train_file: str | None = None, dev_file: str | None = None,
                 max_length: int = 128, batch_size: int = 32, num_workers: int = 0, bucket: bool = True,
                 pool_batches: int = 50, seed: int = 0, doctor: bool = True) -> None:
        if max_length < 8:
            raise ConfigError(f"data.max_length={max_length} is too short; use at least 8 tokens")
        if batch_size < 1 or num_workers < 0:
            raise ConfigError(f"data.batch_size must be >= 1 and data.num_workers >= 0, got {batch_size}, "
                              f"{num_workers}")
        self.root = str(root)
        self.files = {"train": train_file, "dev": dev_file}
        self.max_length, self.examples_per_batch = int(max_length), int(batch_size)
        self.bucket, self.pool_batches, self.seed = bool(bucket), int(pool_batches), int(seed)
        self.batch_size = 1 if self.bucket else self.examples_per_batch  # what the Trainer's loader uses
        self.num_workers = int(num_workers)
        self.doctor = bool(doctor)
        self.tokenizer: Any = None
        self._examples: dict[str, list[Any]] = {}
        self._datasets: dict[str, Dataset] = {}

    @property
    def eval_batch_size(self) -> int:  # type: ignore[override]
        """Samples per evaluation loader batch: 1 when bucketing (each dataset item is a whole batch)."""
        return 1 if self.bucket else self.examples_per_batch

    @eval_batch_size.setter
    def eval_batch_size(self, value: int | None) -> None:
        """Examples per evaluation batch (set before the split is built)."""
        if value:
            self.examples_per_batch = int(value)
            self.batch_size = 1 if self.bucket else self.examples_per_batch

    # -- files and examples -------------------------------------------------------------------------------

    def split_file(self, split: str) -> Path:
        """The file of ``split`` (``train``, ``dev``/``val``, ``test`` or a file name inside ``root``)."""
        root = Path(self.root)
        explicit = self.files.get("dev" if split == "val" else split)
        if explicit:
            path = Path(explicit) if Path(explicit).is_absolute() else root / explicit
            if not path.is_file():
                raise DataError(f"{split} file {path} does not exist")
            return path
        if not root.is_dir():
            raise DataError(f"dataset folder {root} does not exist; expected {self.layout}")
        for stem in SPLIT_ALIASES.get(split, (split,)):
            for suffix in ("", *self.suffixes):
                if (root / f"{stem}{suffix}").is_file():
                    return root / f"{stem}{suffix}"
        names = [f"{s}{x}" for s in SPLIT_ALIASES.get(split, (split,)) for x in self.suffixes]
        raise DataError(f"no {split} split in {root} (looked for {', '.join(names)}); expected {self.layout}")

    def has_split(self, split: str) -> bool:
        try:
            self.split_file(split)
        except DataError:
            return False
        return True

    def examples(self, split: str) -> list[Any]:
        """The examples of a split (read once)."""
        if split not in self._examples:
            self._examples[split] = self.read(self.split_file(split), train=split == "train")
        return self._examples[split]

    @abstractmethod
    def read(self, path: Path, *, train: bool) -> list[Any]:
        """Parse one split file."""

    @abstractmethod
    def encode(self, examples: list[Any], *, train: bool) -> list[dict[str, Any]]:
        """Tokenise examples into features (needs :meth:`configure`)."""

    @property
    @abstractmethod
    def labels(self) -> list[str]:
        """Label names, index order (the head's outputs)."""

    # -- the task's side ----------------------------------------------------------------------------------

    def configure(self, *, tokenizer: Any) -> None:
        """Hand over the model's tokenizer; call before any split is built."""
        if self._datasets:
            logger.warning("TextDataModule.configure() after the datasets were built has no effect on them")
        self.tokenizer = tokenizer

    def preprocess_spec(self) -> dict[str, Any]:
        """What a deployed predictor must repeat (the tokenizer itself is added by the task)."""
        return {"max_length": self.max_length}

    def meta(self) -> dict[str, Any]:
        """Data facts the task writes into meta.json beside the labels."""
        return {}

    # -- datasets -----------------------------------------------------------------------------------------

    def dataset(self, split: str, *, train: bool | None = None) -> Dataset:
        """The featurised ``split`` as the Trainer's loaders expect it (bucketed batches or single features)."""
        train = split == "train" if train is None else train
        key = f"{split}:{train}"
        if key not in self._datasets:
            if self.tokenizer is None:
                raise ConfigError(f"{type(self).__name__} has no tokenizer: the task must call configure() first")
            features = self.encode(self.examples(split), train=train)
            if self.bucket:
                self._datasets[key] = LengthBucketedBatches(features, self.examples_per_batch, shuffle=train,
                                                            seed=self.seed, pool_batches=self.pool_batches)
            else:
                self._datasets[key] = _ListDataset(features)
        return self._datasets[key]

    def train_dataset(self) -> Dataset:
        return self.dataset("train")

    def val_dataset(self) -> Dataset | None:
        if not self.has_split("dev"):
            logger.warning("no dev split in %s; training runs without evaluation", self.root)
            return None
        return self.dataset("dev")


class _ListDataset(Dataset):
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        return self.items[index]


class TextClassificationData(TextDataModule):
    """Single texts or text pairs with a class label: ``train.tsv`` / ``dev.tsv`` or CLUE-style JSONL.

    Args:
        label_file: label names, one per line, index order (default: ``labels.txt`` or ``label.txt`` in ``root``
            when present, else the sorted labels of the training split).
        **kwargs: see :class:`TextDataModule`.
    """

    suffixes = (".tsv", ".jsonl", ".json", ".txt")
    layout = "root/train.tsv and root/dev.tsv with a 'text<TAB>label' header (or text_a, text_b, label), or CLUE JSONL"

    def __init__(self, *, root: str, label_file: str | None = None, **kwargs: Any) -> None:
        super().__init__(root=root, **kwargs)
        self.label_file = label_file
        self._labels: list[str] | None = None

    def read(self, path: Path, *, train: bool) -> list[Any]:
        examples = read_classification(path, require_label=True)  # splits are for training and evaluation
        known = set(self.labels) if not train else None
        for example in examples if known else []:
            if example.label is not None and example.label not in known:
                raise DataError(f"{example.source}: label {example.label!r} is not among the {len(known)} training "
                                f"labels {sorted(known)[:10]}; add it to the label file or fix the line")
        return examples

    @property
    def labels(self) -> list[str]:
        if self._labels is None:
            path = Path(self.root) / self.label_file if self.label_file else next(
                (Path(self.root) / n for n in ("labels.txt", "label.txt") if (Path(self.root) / n).is_file()), None)
            if path is not None:
                self._labels = read_label_list(path)
            else:
                self._labels = sorted({e.label for e in self.examples("train") if e.label is not None})
            if len(self._labels) < 2:
                raise DataError(f"{self.root} has {len(self._labels)} label(s); classification needs at least two")
        return self._labels

    @property
    def is_pair(self) -> bool:
        """Whether the examples are text pairs."""
        return any(e.text_pair is not None for e in self.examples("train"))

    def encode(self, examples: list[Any], *, train: bool) -> list[dict[str, Any]]:
        index = {name: i for i, name in enumerate(self.labels)}
        return encode_texts(self.tokenizer, examples, index, self.max_length)

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return classification_inventory(self, split)

    def meta(self) -> dict[str, Any]:
        return {"pair": self.is_pair}


class TokenClassificationData(TextDataModule):
    """CoNLL-style BIO files (``train.txt`` / ``dev.txt``): one ``word TAG`` per line, blank lines between sentences.

    Args:
        label_file: tag names, one per line (default: ``O`` then ``B-``/``I-`` of every entity type in training).
        **kwargs: see :class:`TextDataModule`.
    """

    suffixes = (".txt", ".conll", ".bio", ".tsv")
    layout = "root/train.txt and root/dev.txt in CoNLL BIO format ('word TAG' per line, blank line between sentences)"

    def __init__(self, *, root: str, label_file: str | None = None, **kwargs: Any) -> None:
        super().__init__(root=root, **kwargs)
        self.label_file = label_file
        self._labels: list[str] | None = None

    def read(self, path: Path, *, train: bool) -> list[Any]:
        sentences = read_conll(path)
        if not train:
            known = set(self.labels)
            for s in sentences:
                unknown = [t for t in s.tags if t not in known]
                if unknown:
                    raise DataError(f"{s.source}: tag {unknown[0]!r} does not occur in training; known tags: "
                                    f"{sorted(known)}")
        return sentences

    @property
    def labels(self) -> list[str]:
        if self._labels is None:
            if self.label_file:
                self._labels = read_label_list(Path(self.root) / self.label_file)
            else:
                types = sorted({t[2:] for s in self.examples("train") for t in s.tags if t != "O"})
                self._labels = ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]
        return self._labels

    def encode(self, examples: list[Any], *, train: bool) -> list[dict[str, Any]]:
        return encode_tagged(self.tokenizer, examples, {t: i for i, t in enumerate(self.labels)}, self.max_length)

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return token_inventory(self, split)


class QuestionAnsweringData(TextDataModule):
    """SQuAD-style JSON (``train.json`` / ``dev.json``); long contexts become overlapping windows.

    Args:
        doc_stride: tokens shared by consecutive windows of a long context.
        **kwargs: see :class:`TextDataModule` (``max_length`` defaults to 384).
    """

    suffixes = (".json",)
    layout = 'root/train.json and root/dev.json in SQuAD format ({"data": [{"paragraphs": [{"context", "qas"}]}]})'

    def __init__(self, *, root: str, doc_stride: int = 128, max_length: int = 384, **kwargs: Any) -> None:
        super().__init__(root=root, max_length=max_length, **kwargs)
        if not 0 <= doc_stride < max_length // 2:
            raise ConfigError(f"data.doc_stride={doc_stride} must lie in [0, max_length / 2)")
        self.doc_stride = int(doc_stride)

    def read(self, path: Path, *, train: bool) -> list[Any]:
        return read_squad(path)

    @property
    def labels(self) -> list[str]:
        return []

    def encode(self, examples: list[Any], *, train: bool) -> list[dict[str, Any]]:
        return encode_qa(self.tokenizer, examples, self.max_length, self.doc_stride)

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return qa_inventory(self, split)

    def preprocess_spec(self) -> dict[str, Any]:
        return {"max_length": self.max_length, "doc_stride": self.doc_stride}


class InformationExtractionData(TextDataModule):
    """doccano JSONL (``train.jsonl`` / ``dev.jsonl``) turned into UIE prompt examples.

    Args:
        prompt_lang: ``zh``, ``en`` or ``auto`` (``zh`` when the texts contain CJK ideographs): relation prompts
            read ``<subject>的<relation>`` or ``<relation> of <subject>``.
        negative_ratio: negative prompts sampled per positive prompt of a training text.
        **kwargs: see :class:`TextDataModule` (``max_length`` defaults to 512).
    """

    suffixes = (".jsonl", ".json", ".txt")
    layout = "root/train.jsonl and root/dev.jsonl exported from doccano (entities and relations)"

    def __init__(self, *, root: str, prompt_lang: str = "auto", negative_ratio: float = 1.0, max_length: int = 512,
                 **kwargs: Any) -> None:
        super().__init__(root=root, max_length=max_length, **kwargs)
        if prompt_lang not in (*LANGS, "auto"):
            raise ConfigError(f"data.prompt_lang={prompt_lang!r} must be one of {[*LANGS, 'auto']}")
        if negative_ratio < 0:
            raise ConfigError(f"data.negative_ratio={negative_ratio} must be >= 0")
        self.prompt_lang_setting, self.negative_ratio = prompt_lang, float(negative_ratio)

    @property
    def prompt_lang(self) -> str:
        if self.prompt_lang_setting != "auto":
            return self.prompt_lang_setting
        return detect_lang([r.text for r in self.records("train")])

    def records(self, split: str) -> list[Any]:
        key = f"records:{split}"
        if key not in self._examples:
            self._examples[key] = read_doccano(self.split_file(split))
        return self._examples[key]

    def read(self, path: Path, *, train: bool) -> list[Any]:
        entity_types, relation_types = schema_of(self.records("train"))
        records = self.records("train") if train else read_doccano(path)
        # Evaluation also asks about absent types (ratio 1): precision must pay for false positives.
        return prompt_examples(records, lang=self.prompt_lang, negative_ratio=self.negative_ratio if train else 1.0,
                               seed=self.seed, entity_types=entity_types, relation_types=relation_types)

    @property
    def labels(self) -> list[str]:
        entity_types, relation_types = schema_of(self.records("train"))
        return entity_types + [t for t in relation_types if t not in entity_types]

    @property
    def schema(self) -> dict[str, list[str]]:
        """The training schema: entity types and relation types."""
        entity_types, relation_types = schema_of(self.records("train"))
        return {"entities": entity_types, "relations": relation_types}

    def encode(self, examples: list[Any], *, train: bool) -> list[dict[str, Any]]:
        return encode_prompts(self.tokenizer, examples, self.max_length)

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return extraction_inventory(self, split)

    def meta(self) -> dict[str, Any]:
        return {"prompt_lang": self.prompt_lang, "schema": self.schema}
