"""``OCR(version=...)``: each PaddleOCR version builds its det + rec (and the rec's dictionary) and reads rendered
lines; the default is the one ``bench/ocr_versions.py`` chose; explicit stages win; a wrong name says the valid ones."""

from __future__ import annotations

import pytest

from oarkit.core.errors import ConfigError
from oarkit.core.registry import model_info
from oarkit.ocr import OCR, render_page
from oarkit.ocr.pipeline.ocr import DEFAULT_DET, DEFAULT_REC, DEFAULT_VERSION, VERSIONS, resolve_version


def _names(ocr: OCR) -> tuple[str, str]:
    return ocr.stages["det"].model.oarkit_name, ocr.stages["rec"].model.oarkit_name


@pytest.fixture(scope="module", params=list(VERSIONS))
def versioned(request) -> tuple[str, OCR]:
    return request.param, OCR(version=request.param)


@pytest.mark.parametrize(("text", "seed"), [("Invoice total 2024", 3), ("欢迎光临营业时间", 4)])
def test_each_version_reads_a_rendered_line(versioned, text, seed):
    version, ocr = versioned
    page = render_page([text], size=(96, 360), seed=seed)
    assert ocr(page.image).text.replace(" ", "") == text.replace(" ", ""), version


def test_each_version_builds_its_det_rec_and_dictionary(versioned):
    version, ocr = versioned
    assert ocr.version == version and _names(ocr) == VERSIONS[version]
    dictionary = ocr.stages["rec"].parameters["dictionary"]
    assert dictionary.name == model_info(VERSIONS[version][1]).label_names
    # the detector's published DB settings reach the pipeline (PP-OCRv6's own; PaddleOCR's defaults before it)
    published = getattr(ocr.stages["det"].model, "db_postprocess", None) or {}
    assert published.items() <= ocr.stages["det"].parameters["db"].items()


def test_the_default_is_the_chosen_version():
    # bench/results/ocr_versions.md: the lowest page CER within 1.2x PP-OCRv4's latency
    assert DEFAULT_VERSION == "PP-OCRv6-small"
    assert VERSIONS[DEFAULT_VERSION] == (DEFAULT_DET, DEFAULT_REC)
    ocr = OCR(pretrained=False)
    assert ocr.version == DEFAULT_VERSION and _names(ocr) == VERSIONS[DEFAULT_VERSION]


def test_names_match_whatever_their_case_and_separators():
    assert resolve_version("pp-ocrv6_TINY") == resolve_version("PP-OCRv6 tiny") == "PP-OCRv6-tiny"
    assert resolve_version("PP-OCRv5_mobile") == resolve_version("ppocrv5") == "PP-OCRv5"


@pytest.mark.parametrize(("name", "first"), [("PP-OCRv6", "PP-OCRv6-tiny"), ("PP-OCRv6-smal", "PP-OCRv6-small"),
                                             ("PP-OCRv3", "PP-OCRv4")])
def test_an_unknown_version_names_the_valid_ones_closest_first(name, first):
    with pytest.raises(ConfigError, match=f"unknown OCR version '{name}'; versions: {first}, ") as error:
        OCR(version=name)
    assert all(version in str(error.value) for version in VERSIONS)


def test_explicit_stages_win_over_the_version():
    ocr = OCR("ocr/ppocrv6_det_tiny", version="PP-OCRv5", pretrained=False)
    assert _names(ocr) == ("ocr/ppocrv6_det_tiny", "ocr/ppocrv5_rec_mobile") and ocr.version is None
    assert ocr.stages["rec"].parameters["dictionary"].name == "ppocrv5"


def test_a_versions_model_on_the_command_line_comes_with_its_partner():
    # oarkit predict ocr/ppocrv4_rec_mobile IMAGE: PP-OCRv4's detector beside it, not the default's
    ocr = OCR.from_source("ocr/ppocrv4_rec_mobile", pretrained=False)
    assert _names(ocr) == VERSIONS["PP-OCRv4"] and ocr.version == "PP-OCRv4"
    told = OCR.from_source("ocr/ppocrv4_rec_mobile", version="PP-OCRv6-small", pretrained=False)
    assert _names(told) == ("ocr/ppocrv6_det_small", "ocr/ppocrv4_rec_mobile")
