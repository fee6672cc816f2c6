"""PaddleOCR's multilingual dictionaries (``latin``, ``cyrillic``, ``arabic``) resolved like pretrained weights: the
oarkit cache, else the installed paddleocr 2.7.3 package's own files, else a download (here from a ``file://`` URL),
else, offline, an error naming the URL and the path to put the file at; a file whose entry count is not the
recognizer's is refused. The cache and download cases use synthetic files of the right size, with the package hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from oarkit.core import ConfigError, DataError, model_info
from oarkit.ocr import CharDictionary, charset
from oarkit.ocr.models.rec import DICTIONARIES


def _write(path: Path, entries: int) -> list[str]:
    """A dictionary file of ``entries`` distinct synthetic characters (a space first, as PaddleOCR's files begin)."""
    chars = [" "] + [chr(0x100 + i) for i in range(entries - 1)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(chars) + "\n", encoding="utf-8")
    return chars


@pytest.fixture
def no_package(monkeypatch):
    """As if no paddleocr 2.x package were installed."""
    monkeypatch.setattr(charset, "installed_release", lambda name: None)


def test_release_dictionaries_are_the_multilingual_recognizers_sizes():
    for name in charset.RELEASED:
        assert model_info(f"ocr/ppocrv3_rec_mobile_{name}").num_classes == DICTIONARIES[name]
        assert charset.RELEASED[name].endswith(f"/PaddleOCR/release/2.7/ppocr/utils/dict/{name}_dict.txt")


def test_offline_error_names_the_url_and_the_path(home, monkeypatch, no_network, no_package):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = charset.released_path("latin")
    assert path == home / "oarkit" / "weights" / "ocr" / "dict" / "latin_dict.txt"
    with pytest.raises(ConfigError) as err:
        CharDictionary.load("latin", use_space_char=True)
    message = str(err.value)
    assert charset.RELEASED["latin"] in message and str(path) in message
    assert "HF_HUB_OFFLINE=1" in message and "character_dict=PATH" in message and "dictionary=PATH" in message
    assert no_network == [] and not path.parent.exists()


@pytest.mark.parametrize(("name", "sample"), [("latin", "é"), ("cyrillic", "ж"), ("arabic", "ب")])
def test_the_installed_paddleocr_package_gives_the_released_dictionaries(home, monkeypatch, no_network, name, sample):
    # make install installs paddleocr 2.7.3 without its dependencies: its wheel carries ppocr/utils/dict/
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    installed = charset.installed_release(name)
    assert installed is not None and installed.parts[-5:] == ("paddleocr", "ppocr", "utils", "dict", f"{name}_dict.txt")
    dictionary = CharDictionary.load(name, use_space_char=True)
    assert dictionary.num_classes == DICTIONARIES[name] == model_info(f"ocr/ppocrv3_rec_mobile_{name}").num_classes
    assert sample in dictionary.characters and dictionary.decode(dictionary.encode(sample * 2)) == sample * 2
    assert no_network == [] and not charset.released_path(name).exists()  # read in place, nothing cached


def test_a_placed_file_is_found_and_recorded(home, monkeypatch, no_network):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    chars = _write(charset.released_path("cyrillic"), DICTIONARIES["cyrillic"] - 2)
    dictionary = CharDictionary.load("cyrillic", use_space_char=True)
    card = model_info("ocr/ppocrv3_rec_mobile_cyrillic")
    assert dictionary.num_classes == DICTIONARIES["cyrillic"] == card.num_classes
    assert dictionary.characters == [*chars, " "] and dictionary.name == "cyrillic"
    assert dictionary.decode(dictionary.encode(chars[5] + chars[7])) == chars[5] + chars[7]
    recorded = dictionary.to_dict()  # an export carries the characters: deploying needs no cache
    assert recorded["characters"] == dictionary.characters
    again = CharDictionary.from_dict(recorded)
    assert again.characters == dictionary.characters and again.num_classes == dictionary.num_classes
    assert no_network == []


@pytest.mark.parametrize("entries", [DICTIONARIES["arabic"] - 3, DICTIONARIES["arabic"] - 1])
def test_a_placed_file_of_another_size_is_refused(home, monkeypatch, entries):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = charset.released_path("arabic")
    _write(path, entries)
    with pytest.raises(DataError) as err:
        CharDictionary.load("arabic", use_space_char=True)
    message = str(err.value)
    assert str(path) in message and f"holds {entries} entries" in message
    assert f"has {DICTIONARIES['arabic'] - 2}" in message and charset.RELEASED["arabic"] in message


def test_download_through_a_file_url_is_checked_and_cached(home, tmp_path, monkeypatch, no_package):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # core's downloader reads file:// URLs offline too
    release = tmp_path / "release" / "latin_dict.txt"
    chars = _write(release, DICTIONARIES["latin"] - 2)
    monkeypatch.setitem(charset.RELEASED, "latin", release.as_uri())
    dictionary = CharDictionary.load("latin", use_space_char=True)
    assert dictionary.num_classes == DICTIONARIES["latin"] and dictionary.characters[:-1] == chars
    cached = charset.released_path("latin")
    assert cached.read_text(encoding="utf-8") == release.read_text(encoding="utf-8")
    assert sorted(p.name for p in cached.parent.iterdir()) == ["latin_dict.txt"]  # no partial file left
    release.unlink()  # the second load reads the cache
    assert CharDictionary.load("latin", use_space_char=True).characters == dictionary.characters


def test_a_download_of_another_size_is_not_kept(home, tmp_path, monkeypatch, no_package):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    release = tmp_path / "release" / "latin_dict.txt"
    _write(release, DICTIONARIES["latin"])  # two entries too many
    monkeypatch.setitem(charset.RELEASED, "latin", release.as_uri())
    with pytest.raises(DataError, match="downloaded from file:.*It was not kept"):
        CharDictionary.load("latin")
    folder = charset.released_path("latin").parent
    assert list(folder.iterdir()) == []


def test_a_failed_download_names_the_url_and_the_path(home, tmp_path, monkeypatch, no_package):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = (tmp_path / "nowhere" / "latin_dict.txt").as_uri()
    monkeypatch.setitem(charset.RELEASED, "latin", missing)
    with pytest.raises(ConfigError, match="could not download character dictionary 'latin'") as err:
        CharDictionary.load("latin")
    assert missing in str(err.value) and str(charset.released_path("latin")) in str(err.value)


def test_an_unknown_name_lists_the_release_names():
    with pytest.raises(ConfigError, match="latinn.*'latin'.*downloaded from PaddleOCR on first use: latin, cyrillic"):
        CharDictionary.load("latinn")


def test_a_dictionary_file_must_fit_the_recognizers_head(tmp_path):
    from oarkit.core import create_model

    path = tmp_path / "three.txt"
    path.write_text("a\nb\nc\n", encoding="utf-8")
    # the card's 187 classes against a file that makes 5 (3 entries, the appended space, the blank): refused, not
    # a head that decodes with the wrong characters
    with pytest.raises(ConfigError, match=r"makes 5 classes .* num_classes=187; pass num_classes=5"):
        create_model("ocr/ppocrv3_rec_mobile_latin", character_dict=str(path))
    model = create_model("ocr/ppocrv3_rec_mobile_latin", character_dict=str(path), num_classes=5)
    assert model.num_classes == 5 and model.head.ctc_head.fc.out_features == 5
    from oarkit.ocr.models.rec import rec_mv3_bilstm_ctc  # the factory itself: create_model fills in the card's size

    with pytest.raises(ConfigError, match="neither a known dictionary"):
        rec_mv3_bilstm_ctc(character_dict=str(tmp_path / "missing.txt"))
    assert rec_mv3_bilstm_ctc(character_dict=str(path)).num_classes == 4  # CRNN: no space appended by default
