"""The dataset doctor: what is wrong with a dataset before training, each problem with its files and its fix.

A kit's data module describes each split as a :class:`DataInventory` (``data.inventory(split)``: the samples
with their image file or text, the class ids they hold, the image size when it is cheap, and the kit's own label
problems as :class:`Finding` objects). :func:`diagnose` runs the checks every kit shares on them:

- counts per split and per class, image sizes (min / median / max);
- missing, corrupt or unreadable image files (opened with PIL, verified and decoded);
- class imbalance in training, classes without training or validation samples;
- the same image (a 64-bit difference hash) or text in training and validation.

``oarkit check-data -c RECIPE`` prints the :class:`DataReport`; training runs :func:`check_before_training`
first (``data.doctor=false`` turns it off). Core knows no kit: it only calls ``inventory``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from oarkit.core.errors import DataCheckError, DataError

logger = logging.getLogger(__name__)

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
#: files named in a finding (the count says how many there are)
SHOWN = 5
#: largest over smallest class count in training above which the classes are called imbalanced
IMBALANCE_RATIO = 10.0
#: images beyond which the duplicate search (a decode and hash of every image) is skipped
HASH_LIMIT = 20000


@dataclass
class Finding:
    """One problem (or fact) about a dataset.

    Attributes:
        severity: ``error`` (training would fail or learn garbage), ``warning`` (it runs, worse) or ``info``.
        kind: a stable name (``corrupt_image``, ``class_imbalance``, ``seg/mask_size``, ...).
        message: what is wrong, in a sentence.
        fix: what to do about it.
        files: the first files concerned.
        count: how many files (or samples) are concerned in all.
        split: the split it was found in (``None``: several).
    """

    severity: Severity
    kind: str
    message: str
    fix: str = ""
    files: list[str] = field(default_factory=list)
    count: int = 0
    split: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")
        self.count = max(int(self.count), len(self.files))
        self.files = [str(f) for f in self.files[:SHOWN]]

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "kind": self.kind, "split": self.split, "message": self.message,
                "files": list(self.files), "count": self.count, "fix": self.fix}


@dataclass
class InventorySample:
    """One sample as the doctor sees it.

    Attributes:
        path: its image file (``None`` for text or in-memory samples).
        text: its text (text tasks; a recognition label is a label, not this).
        labels: the class ids it holds (a class label, the classes of a mask or of boxes).
        size: ``(width, height)`` when known without opening the file (generated sets); read from the file otherwise.
    """

    path: str | None = None
    text: str | None = None
    labels: tuple[int, ...] = ()
    size: tuple[int, int] | None = None


@dataclass
class DataInventory:
    """What a data module knows about one split.

    Attributes:
        split: its name.
        samples: every sample.
        classes: the class names, id order (empty when the task has no classes: OCR recognition, QA).
        findings: the kit's own label problems (out-of-range labels, empty masks, degenerate boxes, ...).
        imbalance_fix: what the kit offers against class imbalance (a config key), for the finding's fix.
        source: where the split was read from, for messages.
    """

    split: str
    samples: list[InventorySample]
    classes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    imbalance_fix: str = "collect more samples of the rare classes (or fewer of the common ones)"
    source: str = ""


@runtime_checkable
class InventoryProvider(Protocol):
    """A data module the doctor can examine; ``inventory`` returns ``None`` for a split that does not exist."""

    def inventory(self, split: str) -> DataInventory | None: ...


# ----------------------------------------------------------------------------- images
def dhash(image: Any) -> int:
    """The 64-bit difference hash of a PIL image: a 9x8 grey thumbnail, one bit per left-right brightness step."""
    from PIL import Image

    grey = np.asarray(image.convert("L").resize((9, 8), Image.Resampling.LANCZOS), dtype=np.int16)
    bits = (grey[:, 1:] > grey[:, :-1]).flatten()
    return int(sum(1 << i for i, bit in enumerate(bits) if bit))


@dataclass
class _ImageScan:
    size: tuple[int, int] | None = None
    hash: int | None = None
    problem: str | None = None  # "missing" or the decoder's complaint


def scan_image(path: str, *, want_hash: bool) -> _ImageScan:
    """Open, verify and decode one image file (a truncated or corrupt file fails here, not mid-epoch)."""
    from PIL import Image

    if not os.path.isfile(path):
        return _ImageScan(problem="missing")
    try:
        with Image.open(path) as image:
            image.verify()  # checksums and structure; the image cannot be used afterwards
        with Image.open(path) as image:
            size = (int(image.width), int(image.height))
            image.draft("RGB", (64, 64))  # JPEG decodes at a fraction of the size: a full pass, faster
            image.load()
            return _ImageScan(size=size, hash=dhash(image) if want_hash else None)
    except Exception as err:  # noqa: BLE001 - anything a decoder raises means the file cannot be trained on
        return _ImageScan(problem=f"{type(err).__name__}: {err}")


# ----------------------------------------------------------------------------- the report
@dataclass
class DataReport:
    """Everything the doctor found: per-split statistics and the findings, worst first."""

    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        """Whether nothing stops training."""
        return not self.errors

    def kinds(self) -> list[str]:
        return [f.kind for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "errors": len(self.errors), "warnings": len(self.warnings), "splits": self.stats,
                "findings": [f.to_dict() for f in self.findings]}

    def table(self) -> str:
        """A readable report: one line per split, the class counts, then the findings with their fixes."""
        lines = [f"{'split':<8} {'samples':>8} {'classes':>8}  image sizes w x h (min / median / max)"]
        for split, s in self.stats.items():
            sizes = s.get("image_size")
            shown = " / ".join(f"{w}x{h}" for w, h in (sizes["min"], sizes["median"], sizes["max"])) if sizes else "-"
            lines.append(f"{split:<8} {s['samples']:>8} {len(s.get('class_counts') or {}):>8}  {shown}")
        for split, s in self.stats.items():
            counts = s.get("class_counts") or {}
            if counts:
                ranked = sorted(counts.items(), key=lambda kv: -kv[1])
                listed = ranked if len(ranked) <= 12 else [*ranked[:6], ("...", "..."), *ranked[-6:]]
                lines.append(f"{split} per class: " + ", ".join(f"{k} {v}" for k, v in listed))
        if not self.findings:
            lines.append("no problems found")
        for f in self.findings:
            where = f" [{f.split}]" if f.split else ""
            lines.append(f"{f.severity.upper():<8} {f.kind}{where}: {f.message}")
            if f.files:
                more = f" (and {f.count - len(f.files)} more)" if f.count > len(f.files) else ""
                lines.append(f"{'':<9}files: {', '.join(f.files)}{more}")
            if f.fix:
                lines.append(f"{'':<9}fix: {f.fix}")
        lines.append(f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


# ----------------------------------------------------------------------------- the checks
def _size_stats(sizes: list[tuple[int, int]]) -> dict[str, list[int]] | None:
    if not sizes:
        return None
    array = np.asarray(sizes)
    areas = array[:, 0] * array[:, 1]
    order = np.argsort(areas, kind="stable")
    return {"min": array[order[0]].tolist(), "median": array[order[len(order) // 2]].tolist(),
            "max": array[order[-1]].tolist()}


def _class_counts(inv: DataInventory) -> dict[str, int]:
    counts = Counter(c for s in inv.samples for c in set(s.labels))
    names = inv.classes
    return {(names[c] if 0 <= c < len(names) else str(c)): counts.get(c, 0) for c in range(len(names))}


def _scan_split(inv: DataInventory, want_hash: bool, workers: int) -> tuple[list[_ImageScan | None], list[Finding]]:
    paths = [s.path for s in inv.samples]
    todo = [i for i, p in enumerate(paths) if p is not None]
    scans: list[_ImageScan | None] = [None] * len(paths)
    with ThreadPoolExecutor(max_workers=workers) as pool:  # PIL decodes without the GIL
        for i, scan in zip(todo, pool.map(lambda i: scan_image(paths[i], want_hash=want_hash), todo), strict=True):
            scans[i] = scan
    missing = [paths[i] for i in todo if scans[i].problem == "missing"]
    broken = [(paths[i], scans[i].problem) for i in todo if scans[i].problem not in (None, "missing")]
    findings = []
    if missing:
        findings.append(Finding("error", "missing_image", f"{len(missing)} image file(s) of {inv.source or inv.split} "
                                f"do not exist", "fix the paths (relative to data.root) or remove the entries",
                                missing, len(missing), inv.split))
    if broken:
        findings.append(Finding("error", "corrupt_image", f"{len(broken)} image file(s) cannot be decoded (first: "
                                f"{broken[0][0]}: {broken[0][1]})", "re-export or delete these files (and their "
                                "labels); a truncated download is the usual cause", [p for p, _ in broken],
                                len(broken), inv.split))
    return scans, findings


def _class_findings(train: DataInventory, val: DataInventory | None, ratio: float) -> list[Finding]:
    findings = []
    counts = _class_counts(train)
    if not counts:
        return findings
    empty = [name for name, n in counts.items() if n == 0]
    if empty:
        findings.append(Finding("error", "class_without_train_samples",
                                f"{len(empty)} of {len(counts)} classes have no training sample: {empty[:10]}",
                                "add training samples of them, or remove them from the class list (label file)",
                                count=len(empty), split="train"))
    present = {k: v for k, v in counts.items() if v > 0}
    if len(present) >= 2:
        big, small = max(present, key=present.get), min(present, key=present.get)
        if present[big] / present[small] > ratio:
            rare = [k for k, v in present.items() if v * ratio < present[big]]
            findings.append(Finding("warning", "class_imbalance",
                                    f"class {big!r} has {present[big]} training samples but {small!r} only "
                                    f"{present[small]} ({present[big] / present[small]:.0f}x, over {ratio:g}x); rare: "
                                    f"{rare[:10]}", train.imbalance_fix, count=len(rare), split="train"))
    if val is not None and val.samples:
        val_counts = _class_counts(val)
        absent = [name for name, n in val_counts.items() if n == 0 and counts.get(name, 0) > 0]
        if absent:
            findings.append(Finding("warning", "class_without_val_samples",
                                    f"{len(absent)} classes have no validation sample, so their accuracy is never "
                                    f"measured: {absent[:10]}", "move a few samples of each into the validation split",
                                    count=len(absent), split="val"))
    return findings


def _text_key(text: str) -> str:
    return hashlib.sha1(" ".join(text.split()).lower().encode("utf-8")).hexdigest()


def _duplicate_findings(train: DataInventory, val: DataInventory, train_hashes: list[int | None],
                        val_hashes: list[int | None]) -> list[Finding]:
    findings = []
    by_hash: dict[int, list[str]] = defaultdict(list)
    for sample, h in zip(train.samples, train_hashes, strict=True):
        if h is not None and sample.path:
            by_hash[h].append(sample.path)
    pairs = [f"{by_hash[h][0]} = {s.path}" for s, h in zip(val.samples, val_hashes, strict=True)
             if h is not None and h in by_hash]
    if pairs:
        findings.append(Finding("warning", "train_val_duplicate",
                                f"{len(pairs)} validation image(s) look the same as training images (equal 64-bit "
                                "difference hash), which inflates the validation metric",
                                "remove them from one of the splits", pairs, len(pairs), "val"))
    texts = {_text_key(s.text): s.text for s in train.samples if s.text}
    same = [s.text for s in val.samples if s.text and _text_key(s.text) in texts]
    if same:
        findings.append(Finding("warning", "train_val_duplicate",
                                f"{len(same)} validation text(s) also occur in training, which inflates the "
                                "validation metric", "remove them from one of the splits",
                                [t[:60] for t in same], len(same), "val"))
    return findings


def diagnose(inventories: Iterable[DataInventory], *, imbalance_ratio: float = IMBALANCE_RATIO,
             hash_limit: int = HASH_LIMIT, workers: int | None = None) -> DataReport:
    """Run the common checks on the inventories of a dataset's splits (``train`` and ``val`` by name).

    Args:
        inventories: one per split.
        imbalance_ratio: largest over smallest training class count above which a warning is given.
        hash_limit: skip the duplicate-image search above this many images (it decodes every image).
        workers: threads that open images (default: up to 8).
    """
    splits = {inv.split: inv for inv in inventories}
    report = DataReport()
    workers = workers or min(8, os.cpu_count() or 1)
    images = sum(1 for inv in splits.values() for s in inv.samples if s.path)
    want_hash = "train" in splits and "val" in splits and images <= hash_limit
    if images > hash_limit and "val" in splits:
        report.findings.append(Finding("info", "duplicates_not_checked", f"{images} images is more than "
                                       f"{hash_limit}: the train/val duplicate search was skipped",
                                       "run `oarkit check-data` with a smaller split to search for duplicates"))
    hashes: dict[str, list[int | None]] = {}
    for name, inv in splits.items():
        report.findings += inv.findings
        scans, found = _scan_split(inv, want_hash, workers)
        report.findings += found
        hashes[name] = [scan.hash if scan else None for scan in scans]
        sizes = [s.size or (scan.size if scan else None) for s, scan in zip(inv.samples, scans, strict=True)]
        report.stats[name] = {"samples": len(inv.samples), "source": inv.source,
                              "image_size": _size_stats([z for z in sizes if z is not None]),
                              "class_counts": _class_counts(inv)}
        if not inv.samples:
            report.findings.append(Finding("error" if name == "train" else "warning", "empty_split",
                                           f"the {name} split ({inv.source or name}) holds no samples",
                                           "check data.root and the split's list file or folder", split=name))
    if "train" in splits:
        report.findings += _class_findings(splits["train"], splits.get("val"), imbalance_ratio)
        if "val" in splits:
            report.findings += _duplicate_findings(splits["train"], splits["val"], hashes["train"], hashes["val"])
        else:
            report.findings.append(Finding("info", "no_val_split", "there is no validation split: training runs "
                                           "without evaluation", "add a validation split (see the recipe's data "
                                           "section for its list file or folder)"))
    report.findings.sort(key=lambda f: SEVERITIES.index(f.severity))
    return report


def check_data_module(data: Any, splits: Sequence[str] = ("train", "val"), **kwargs: Any) -> DataReport | None:
    """The report on ``data``'s splits, or ``None`` when the data module offers no ``inventory``.

    Args:
        data: a kit's data module.
        splits: the splits to examine; one whose inventory is ``None`` does not exist and is left out.
        **kwargs: see :func:`diagnose`.
    """
    if not isinstance(data, InventoryProvider):
        return None
    inventories, unreadable = [], []
    for split in splits:
        try:
            inventory = data.inventory(split)
        except DataError as err:  # a split that cannot be read at all is a finding of its own
            if any(f.message == str(err) for f in unreadable):
                continue  # val read through train's class list fails with train's message: say it once
            unreadable.append(Finding("error", "unreadable_split", str(err), "see the message: fix the file or "
                                      "folder it names, or point data.root at the dataset", split=split))
            continue
        if inventory is not None:
            inventories.append(inventory)
    report = diagnose(inventories, **kwargs)
    report.findings[:0] = unreadable
    return report


def check_before_training(data: Any, **kwargs: Any) -> DataReport | None:
    """Run the doctor on the training and validation splits unless ``data.doctor`` is false; log the warnings.

    Raises:
        DataCheckError: the report has errors; its message is the report.
    """
    if not getattr(data, "doctor", True):
        return None
    report = check_data_module(data, **kwargs)
    if report is None:
        return None
    for finding in report.findings:
        if finding.severity == "warning":
            logger.warning("data check: %s: %s (fix: %s)", finding.kind, finding.message, finding.fix)
        elif finding.severity == "info":
            logger.info("data check: %s", finding.message)
    if report.errors:
        raise DataCheckError(f"the dataset has {len(report.errors)} problem(s) that stop training:\n{report.table()}\n"
                             "Fix them (or run `oarkit check-data` for the full report; data.doctor=false skips "
                             "the check)", report=report)
    return report
