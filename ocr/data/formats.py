"""OCR label formats: PaddleOCR detection labels, ICDAR 2015 ground truth, PPOCRLabel output, recognition lists
and LMDB recognition sets.

Detection samples are ``(image path, [TextInstance, ...])``; recognition samples are ``(image path or LMDB key,
label)``. Every reader raises :class:`~oarkit.core.errors.DataError` naming the file and line it could not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from oarkit.core.errors import DataError

from ..render.renderer import TextInstance

#: transcriptions that mark a region as "don't care" (PaddleOCR's ``###`` and ICDAR's ``*``)
IGNORE_TEXTS = ("###", "*")

DetSample = tuple[str, list[TextInstance]]


def _instances(entries: object, where: str) -> list[TextInstance]:
    if not isinstance(entries, list):
        raise DataError(f"{where}: the label must be a JSON list of {{transcription, points}}, not "
                        f"{type(entries).__name__}")
    out = []
    for entry in entries:
        if not isinstance(entry, dict) or "points" not in entry:
            raise DataError(f"{where}: every region needs 'points' (and 'transcription'); got {entry!r:.80}")
        points = np.asarray(entry["points"], dtype=np.float32)
        if points.ndim != 2 or points.shape[1] != 2 or len(points) < 3:
            raise DataError(f"{where}: points must be a list of at least 3 [x, y] pairs; got {entry['points']!r:.80}")
        text = str(entry.get("transcription", ""))
        ignore = text in IGNORE_TEXTS or bool(entry.get("difficult", False))
        out.append(TextInstance(text=text, points=points, ignore=ignore))
    return out


def read_det_labels(label_file: str | Path, *, image_root: str | Path | None = None) -> list[DetSample]:
    """A PaddleOCR detection label file: ``image_path\\t[{"transcription": ..., "points": [[x, y], ...]}]``.

    Args:
        label_file: the file.
        image_root: what image paths are relative to (default: the label file's folder).

    ``###`` (and ``*``) transcriptions, and PPOCRLabel's ``"difficult": true``, mark ignored regions.
    """
    label_file = Path(label_file)
    if not label_file.is_file():
        raise DataError(f"detection label file {label_file} does not exist")
    root = Path(image_root) if image_root is not None else label_file.parent
    samples = []
    for n, line in enumerate(label_file.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{label_file}:{n}"
        if "\t" not in line:
            raise DataError(f"{where}: expected 'image_path<TAB>[json regions]', found no tab")
        path, label = line.split("\t", 1)
        try:
            entries = json.loads(label)
        except json.JSONDecodeError as err:
            raise DataError(f"{where}: the regions are not valid JSON ({err})") from err
        samples.append((str(root / path), _instances(entries, where)))
    if not samples:
        raise DataError(f"detection label file {label_file} holds no samples")
    return samples


def read_ppocrlabel(folder: str | Path) -> list[DetSample]:
    """PPOCRLabel's output for one image folder: ``<folder>/Label.txt``, whose image paths start with the
    folder's own name (so they are relative to its parent); regions marked difficult are ignored."""
    folder = Path(folder)
    return read_det_labels(folder / "Label.txt", image_root=folder.parent)


def read_icdar2015_gt(gt_file: str | Path) -> list[TextInstance]:
    """One ICDAR 2015 ground-truth file: ``x1,y1,x2,y2,x3,y3,x4,y4,transcription`` per line (a BOM allowed)."""
    gt_file = Path(gt_file)
    out = []
    for n, line in enumerate(gt_file.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split(",")
        if len(parts) < 9:
            raise DataError(f"{gt_file}:{n}: expected 8 coordinates and a transcription, got {line!r:.80}")
        try:
            coords = np.asarray([float(v) for v in parts[:8]], dtype=np.float32).reshape(4, 2)
        except ValueError as err:
            raise DataError(f"{gt_file}:{n}: coordinates must be numbers ({err})") from err
        text = ",".join(parts[8:])
        out.append(TextInstance(text=text, points=coords, ignore=text in IGNORE_TEXTS))
    return out


def read_icdar2015(image_dir: str | Path, gt_dir: str | Path) -> list[DetSample]:
    """An ICDAR 2015 split: ``img_N.jpg`` in ``image_dir`` with ``gt_img_N.txt`` in ``gt_dir``."""
    image_dir, gt_dir = Path(image_dir), Path(gt_dir)
    images = sorted(p for p in image_dir.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not images:
        raise DataError(f"no images in {image_dir}")
    samples = []
    for image in images:
        gt = gt_dir / f"gt_{image.stem}.txt"
        if not gt.is_file():
            raise DataError(f"{image} has no ground truth {gt}")
        samples.append((str(image), read_icdar2015_gt(gt)))
    return samples


def read_rec_list(list_file: str | Path, *, image_root: str | Path | None = None) -> list[tuple[str, str]]:
    """A recognition list: ``image_path\\tlabel`` per line (the label may hold spaces, not tabs)."""
    list_file = Path(list_file)
    if not list_file.is_file():
        raise DataError(f"recognition list {list_file} does not exist")
    root = Path(image_root) if image_root is not None else list_file.parent
    samples = []
    for n, line in enumerate(list_file.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise DataError(f"{list_file}:{n}: expected 'image_path<TAB>label', found no tab")
        path, label = line.split("\t", 1)
        samples.append((str(root / path), label))
    if not samples:
        raise DataError(f"recognition list {list_file} holds no samples")
    return samples


class LMDBRecSet:
    """A PaddleOCR (and deep-text-recognition-benchmark) LMDB recognition set: ``num-samples``, then
    ``image-%09d`` (encoded image bytes) and ``label-%09d`` (UTF-8), counted from 1.

    Opened lazily, once per process (loader workers each open their own read-only handle).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not (self.path / "data.mdb").is_file():
            raise DataError(f"{self.path} is not an LMDB folder (no data.mdb)")
        self._env = None
        with self._open().begin(write=False) as txn:
            count = txn.get(b"num-samples")
        if count is None:
            raise DataError(f"{self.path} has no 'num-samples' key; it is not a recognition LMDB set")
        self.count = int(count)
        self._env = None  # reopened in each worker

    def _open(self):  # noqa: ANN202 - lmdb.Environment
        if self._env is None:
            try:
                import lmdb
            except ImportError as err:  # pragma: no cover - an ocr extra
                raise DataError("LMDB recognition sets need the lmdb package; pip install 'oarkit[ocr]'") from err
            self._env = lmdb.open(str(self.path), readonly=True, lock=False, readahead=False, meminit=False,
                                  max_readers=32)
        return self._env

    def __len__(self) -> int:
        return self.count

    def get(self, index: int) -> tuple[bytes, str]:
        """The encoded image and label of sample ``index`` (0-based)."""
        with self._open().begin(write=False) as txn:
            key = index + 1
            image = txn.get(b"image-%09d" % key)
            label = txn.get(b"label-%09d" % key)
        if image is None or label is None:
            raise DataError(f"{self.path}: sample {key} is missing its image or label")
        return bytes(image), label.decode("utf-8")

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_env": None}


def write_lmdb_rec_set(path: str | Path, samples: Sequence[tuple[bytes, str]] | Iterator[tuple[bytes, str]]) -> Path:
    """Write encoded images and labels as an LMDB recognition set (the layout :class:`LMDBRecSet` reads)."""
    import lmdb

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    samples = list(samples)
    size = sum(len(image) + len(label.encode()) + 64 for image, label in samples) * 2 + (1 << 20)
    env = lmdb.open(str(path), map_size=size)
    with env.begin(write=True) as txn:
        for i, (image, label) in enumerate(samples, 1):
            txn.put(b"image-%09d" % i, image)
            txn.put(b"label-%09d" % i, label.encode("utf-8"))
        txn.put(b"num-samples", str(len(samples)).encode())
    env.close()
    return path
