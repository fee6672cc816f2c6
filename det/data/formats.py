"""Detection annotations in COCO json, Pascal VOC xml and YOLO txt: readers to records, writers from them.

Layouts (PaddleDetection's for COCO and VOC, Ultralytics' for YOLO)::

    COCO  root/annotations/instances_{train,val}.json   images under root/{train,val}/ (other paths by argument)
    VOC   root/{trainval,test}.txt   "VOCdevkit/VOC2007/JPEGImages/x.jpg VOCdevkit/VOC2007/Annotations/x.xml"
          per line, root/label_list.txt one class per line; or VOCdevkit's ImageSets/Main/<split>.txt of ids
    YOLO  root/data.yaml (names, train/val image folders), root/images/<split>/x.jpg, root/labels/<split>/x.txt
          "class cx cy w h" per line, normalised to [0, 1]

Readers map categories to contiguous 0-based labels in the order of the class list (COCO: by category id);
a box whose category the list does not know gets label ``-1`` for the dataset check to report.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from oarkit.core.errors import ConfigError, DataError, did_you_mean

from .records import DetectionRecord

logger = logging.getLogger(__name__)

FORMATS = ("coco", "voc", "yolo")
#: the list file of each split in PaddleDetection's VOC layout
VOC_LISTS = {"train": "trainval.txt", "val": "test.txt"}


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ConfigError(f"detection data format {fmt!r} is not one of {list(FORMATS)}.{did_you_mean(fmt, FORMATS)}")
    return fmt


def _image_size(path: Path) -> tuple[int, int]:
    try:
        with Image.open(path) as im:
            return im.size
    except (OSError, ValueError) as err:
        raise DataError(f"Image {path} cannot be read ({err}); fix or remove it") from err


# ----------------------------------------------------------------------------------------------------- COCO
def coco_paths(root: str | os.PathLike, split: str, annotation: str | None = None,
               image_dir: str | None = None) -> tuple[Path, Path]:
    """The annotation file and image folder of a split in PaddleDetection's COCO layout (or as given)."""
    root = Path(root)
    ann = Path(annotation) if annotation else Path("annotations") / f"instances_{split}.json"
    images = Path(image_dir) if image_dir else Path(split)
    return (ann if ann.is_absolute() else root / ann), (images if images.is_absolute() else root / images)


def read_coco(annotation: str | os.PathLike, image_dir: str | os.PathLike,
              classes: Sequence[str] | None = None) -> tuple[list[DetectionRecord], list[str]]:
    """Records and class names of a COCO instances file.

    Args:
        annotation: the ``instances_*.json`` file.
        image_dir: the folder its ``file_name``s are relative to.
        classes: the class list to map names onto (a val file read with the training classes); default: the
            file's categories by ascending id.
    """
    annotation = Path(annotation)
    if not annotation.is_file():
        raise DataError(f"COCO annotation file {annotation} does not exist; expected PaddleDetection's layout "
                        "root/annotations/instances_{train,val}.json (or set data.train_annotation / "
                        "data.val_annotation)")
    try:
        data = json.loads(annotation.read_text(encoding="utf-8"))
    except ValueError as err:
        raise DataError(f"COCO annotation file {annotation} is not valid JSON: {err}") from err
    categories = sorted(data.get("categories") or [], key=lambda c: c["id"])
    names = [str(c["name"]) for c in categories]
    classes = list(classes) if classes else names
    index = {name: i for i, name in enumerate(classes)}
    category_label = {c["id"]: index.get(str(c["name"]), -1) for c in categories}
    per_image: dict[int, list[dict]] = {}
    for ann in data.get("annotations") or []:
        per_image.setdefault(ann["image_id"], []).append(ann)
    records = []
    for image in data.get("images") or []:
        anns = per_image.get(image["id"], [])
        boxes = [[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                 for a in anns]
        records.append(DetectionRecord(
            image=str(Path(image_dir) / image["file_name"]), width=int(image["width"]), height=int(image["height"]),
            boxes=np.asarray(boxes, np.float32).reshape(-1, 4),
            labels=[category_label.get(a["category_id"], -1) for a in anns],
            iscrowd=[bool(a.get("iscrowd", 0)) for a in anns], image_id=int(image["id"]),
            annotation=str(annotation), raw_labels=[a["category_id"] for a in anns]))
    return records, classes


def write_coco(records: Sequence[DetectionRecord], classes: Sequence[str], annotation: str | os.PathLike,
               image_dir: str | os.PathLike, *, copy_images: bool = True) -> Path:
    """Write records as a COCO instances file (category ids 1..C, like COCO's own) and their images."""
    annotation, image_dir = Path(annotation), Path(image_dir)
    annotation.parent.mkdir(parents=True, exist_ok=True)
    data: dict = {"images": [], "annotations": [],
                  "categories": [{"id": i + 1, "name": n, "supercategory": "none"} for i, n in enumerate(classes)]}
    for rec in records:
        name = _place_image(rec, image_dir, copy_images)
        data["images"].append({"id": rec.image_id, "file_name": name, "width": rec.width, "height": rec.height})
        for box, label, crowd in zip(rec.boxes.tolist(), rec.labels.tolist(), rec.iscrowd.tolist()):
            w, h = box[2] - box[0], box[3] - box[1]
            data["annotations"].append({"id": len(data["annotations"]) + 1, "image_id": rec.image_id,
                                        "category_id": int(label) + 1, "bbox": [round(v, 3) for v in
                                                                                (box[0], box[1], w, h)],
                                        "area": round(w * h, 3), "iscrowd": int(crowd)})
    annotation.write_text(json.dumps(data), encoding="utf-8")
    return annotation


def _place_image(rec: DetectionRecord, image_dir: Path, copy: bool, prefix: str = "") -> str:
    """Copy (or name) the record's image under ``image_dir`` and return its file name there."""
    name = f"{prefix}{rec.image_id:06d}{Path(rec.image).suffix.lower() or '.jpg'}"
    if copy:
        image_dir.mkdir(parents=True, exist_ok=True)
        target = image_dir / name
        if Path(rec.image).resolve() != target.resolve():
            shutil.copyfile(rec.image, target)
    return name


# ----------------------------------------------------------------------------------------------------- VOC
def read_class_list(path: str | os.PathLike) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"class list {path} does not exist; write one class name per line")
    names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not names:
        raise DataError(f"class list {path} is empty; write one class name per line")
    return names


def _parse_voc_xml(xml_path: Path, image_path: Path, classes: dict[str, int], image_id: int) -> DetectionRecord:
    try:
        tree = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError) as err:
        raise DataError(f"VOC annotation {xml_path} cannot be read: {err}") from err
    size = tree.find("size")
    if size is not None and size.findtext("width"):
        width, height = int(float(size.findtext("width"))), int(float(size.findtext("height")))
    else:
        width, height = _image_size(image_path)
    boxes, labels, crowd, raw = [], [], [], []
    for obj in tree.iter("object"):
        name = (obj.findtext("name") or "").strip()
        bnd = obj.find("bndbox")
        if bnd is None:
            raise DataError(f"VOC annotation {xml_path}: object {name!r} has no bndbox")
        boxes.append([float(bnd.findtext(k) or 0) for k in ("xmin", "ymin", "xmax", "ymax")])
        labels.append(classes.get(name, -1))
        crowd.append((obj.findtext("difficult") or "0").strip() == "1")
        raw.append(name)
    return DetectionRecord(str(image_path), width, height, np.asarray(boxes, np.float32).reshape(-1, 4), labels,
                           crowd, image_id, str(xml_path), raw)


def read_voc(root: str | os.PathLike, list_file: str, classes: Sequence[str] | None = None,
             label_list: str = "label_list.txt") -> tuple[list[DetectionRecord], list[str]]:
    """Records of a VOC split: a PaddleDetection list of ``image xml`` pairs, or a VOCdevkit id list.

    Args:
        root: the dataset folder.
        list_file: ``trainval.txt`` / ``test.txt`` under ``root`` (pairs), or a path to VOCdevkit's
            ``ImageSets/Main/<split>.txt`` (ids; images and annotations are found beside ``ImageSets``).
        classes: the class names; default: ``label_list`` under ``root``.
        label_list: the class list file.
    """
    root = Path(root)
    classes = list(classes) if classes else read_class_list(root / label_list)
    index = {n: i for i, n in enumerate(classes)}
    path = Path(list_file) if Path(list_file).is_absolute() else root / list_file
    if not path.is_file():
        raise DataError(f"VOC list file {path} does not exist; expected PaddleDetection's layout (root/trainval.txt "
                        "and root/test.txt of 'image xml' lines) or VOCdevkit's ImageSets/Main/<split>.txt")
    records = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        parts = line.split()
        if not parts:
            continue
        if len(parts) >= 2:
            image, xml = root / parts[0], root / parts[1]
        else:
            year_dir = path.parent.parent.parent  # VOCdevkit/VOC2007/ImageSets/Main/x.txt
            image, xml = year_dir / "JPEGImages" / f"{parts[0]}.jpg", year_dir / "Annotations" / f"{parts[0]}.xml"
        records.append(_parse_voc_xml(xml, image, index, i))
    return records, classes


def write_voc(records: Sequence[DetectionRecord], classes: Sequence[str], root: str | os.PathLike, split: str,
              *, copy_images: bool = True) -> Path:
    """Write records in PaddleDetection's VOC layout: xml files, images, the split's list and ``label_list.txt``."""
    root = Path(root)
    ann_dir, img_dir = root / "VOCdevkit" / "VOC2007" / "Annotations", root / "VOCdevkit" / "VOC2007" / "JPEGImages"
    ann_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for rec in records:
        name = _place_image(rec, img_dir, copy_images, prefix=f"{split}_")  # one folder holds every split
        ann = ET.Element("annotation")
        ET.SubElement(ann, "filename").text = name
        size = ET.SubElement(ann, "size")
        for key, value in (("width", rec.width), ("height", rec.height), ("depth", 3)):
            ET.SubElement(size, key).text = str(value)
        for box, label, crowd in zip(rec.boxes.tolist(), rec.labels.tolist(), rec.iscrowd.tolist()):
            obj = ET.SubElement(ann, "object")
            ET.SubElement(obj, "name").text = classes[label]
            ET.SubElement(obj, "difficult").text = str(int(crowd))
            bnd = ET.SubElement(obj, "bndbox")
            for key, value in zip(("xmin", "ymin", "xmax", "ymax"), box):
                ET.SubElement(bnd, key).text = f"{value:.2f}"
        xml = ann_dir / f"{Path(name).stem}.xml"
        ET.ElementTree(ann).write(xml, encoding="utf-8")
        lines.append(f"{(img_dir / name).relative_to(root)} {xml.relative_to(root)}")
    list_file = root / VOC_LISTS.get(split, f"{split}.txt")
    list_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "label_list.txt").write_text("\n".join(classes) + "\n", encoding="utf-8")
    return list_file


# ----------------------------------------------------------------------------------------------------- YOLO
def read_yolo_yaml(root: str | os.PathLike, data_yaml: str = "data.yaml") -> dict:
    path = Path(data_yaml) if Path(data_yaml).is_absolute() else Path(root) / data_yaml
    if not path.is_file():
        raise DataError(f"YOLO data file {path} does not exist; expected names: and train:/val: image folders")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    names = data.get("names")
    if isinstance(names, dict):
        names = [names[k] for k in sorted(names)]
    if not names:
        raise DataError(f"YOLO data file {path} has no 'names'")
    data["names"] = [str(n) for n in names]
    return data


def read_yolo(root: str | os.PathLike, split: str, classes: Sequence[str] | None = None,
              data_yaml: str = "data.yaml") -> tuple[list[DetectionRecord], list[str]]:
    """Records of a YOLO split: the image folder the data yaml names for ``split`` and its ``labels`` twin."""
    from oarkit.core.data.images import IMAGE_SUFFIXES

    root = Path(root)
    data = read_yolo_yaml(root, data_yaml)
    names = data["names"]
    classes = list(classes) if classes else names
    remap = [classes.index(n) if n in classes else -1 for n in names]
    folder = data.get(split) or f"images/{split}"
    base = Path(data.get("path") or root)
    base = base if base.is_absolute() else root / base if data.get("path") else root
    image_dir = Path(folder) if Path(folder).is_absolute() else base / folder
    if not image_dir.is_dir():
        raise DataError(f"YOLO split {split!r}: image folder {image_dir} does not exist")
    records = []
    for i, image in enumerate(sorted(p for p in image_dir.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)):
        rel = image.relative_to(base) if image.is_relative_to(base) else image.name
        parts = list(Path(rel).parts)
        parts = ["labels" if p == "images" else p for p in parts]
        label_file = (base / Path(*parts)).with_suffix(".txt")
        width, height = _image_size(image)
        boxes, labels, raw = [], [], []
        if label_file.is_file():
            for n, line in enumerate(label_file.read_text(encoding="utf-8").splitlines()):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) < 5:
                    raise DataError(f"{label_file}:{n + 1}: expected 'class cx cy w h', got {line!r}")
                cls, cx, cy, w, h = int(float(fields[0])), *(float(v) for v in fields[1:5])
                boxes.append([(cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width,
                              (cy + h / 2) * height])
                labels.append(remap[cls] if 0 <= cls < len(remap) else -1)
                raw.append(cls)
        records.append(DetectionRecord(str(image), width, height, np.asarray(boxes, np.float32).reshape(-1, 4),
                                       labels, [False] * len(labels), i, str(label_file), raw))
    return records, classes


def write_yolo(records: Sequence[DetectionRecord], classes: Sequence[str], root: str | os.PathLike, split: str,
               *, copy_images: bool = True) -> Path:
    """Write records in YOLO layout (crowd boxes are left out: YOLO has no such flag) and update ``data.yaml``."""
    root = Path(root)
    label_dir = root / "labels" / split
    label_dir.mkdir(parents=True, exist_ok=True)
    for rec in records:
        name = _place_image(rec, root / "images" / split, copy_images)
        lines = []
        for box, label, crowd in zip(rec.boxes.tolist(), rec.labels.tolist(), rec.iscrowd.tolist()):
            if crowd:
                continue
            cx, cy = (box[0] + box[2]) / 2 / rec.width, (box[1] + box[3]) / 2 / rec.height
            w, h = (box[2] - box[0]) / rec.width, (box[3] - box[1]) / rec.height
            lines.append(f"{label} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}")
        (label_dir / f"{Path(name).stem}.txt").write_text("\n".join(lines) + ("\n" if lines else ""))
    path = root / "data.yaml"
    data = yaml.safe_load(path.read_text()) if path.is_file() else {}
    data.update({"path": ".", split: f"images/{split}", "names": dict(enumerate(classes))})
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ----------------------------------------------------------------------------------------------------- dispatch
def read_split(fmt: str, root: str | os.PathLike, split: str, classes: Sequence[str] | None = None,
               **paths: str | None) -> tuple[list[DetectionRecord], list[str]]:
    """Records and class names of ``split`` (``train``/``val``, or a file the format understands).

    Args:
        fmt: ``coco``, ``voc`` or ``yolo``.
        root: the dataset folder.
        split: ``train`` or ``val``.
        classes: the class list (e.g. the training split's, for the validation split).
        paths: per-format paths: ``annotation`` and ``image_dir`` (COCO), ``list_file`` and ``label_list`` (VOC),
            ``data_yaml`` (YOLO); ``None`` takes the layout's default.
    """
    check_format(fmt)
    if fmt == "coco":
        ann, images = coco_paths(root, split, paths.get("annotation"), paths.get("image_dir"))
        return read_coco(ann, images, classes)
    if fmt == "voc":
        return read_voc(root, paths.get("list_file") or VOC_LISTS.get(split, split), classes,
                        paths.get("label_list") or "label_list.txt")
    return read_yolo(root, split, classes, paths.get("data_yaml") or "data.yaml")


def write_split(fmt: str, records: Sequence[DetectionRecord], classes: Sequence[str], root: str | os.PathLike,
                split: str) -> Path:
    """Write one split in ``fmt``'s layout under ``root`` (images copied); return the annotation or list file."""
    check_format(fmt)
    if fmt == "coco":
        ann, images = coco_paths(root, split)
        return write_coco(records, classes, ann, images)
    if fmt == "voc":
        return write_voc(records, classes, root, split)
    return write_yolo(records, classes, root, split)


def convert_dataset(src_format: str, src_root: str | os.PathLike, dst_format: str, dst_root: str | os.PathLike,
                    splits: Sequence[str] = ("train", "val"), check: str = "refuse") -> dict[str, int]:
    """Convert a dataset between COCO, VOC and YOLO layouts; returns the image count written per split.

    Every split goes through the dataset check first (:func:`~.check.check_records`): with ``refuse`` bad boxes
    stop the conversion, with ``fix`` they are clipped or dropped, with ``report`` they are written as they are
    (unknown categories cannot be written and are dropped).
    """
    from .check import check_records

    classes: list[str] | None = None
    counts = {}
    for split in splits:
        records, classes = read_split(src_format, src_root, split, classes)
        records, _ = check_records(records, len(classes), action=check, source=f"{src_root} ({split})")
        records = [r.select(r.labels >= 0) for r in records]
        write_split(dst_format, records, classes, dst_root, split)
        counts[split] = len(records)
        logger.info("%s %s: %d images -> %s %s", src_format, split, len(records), dst_format, dst_root)
    return counts
