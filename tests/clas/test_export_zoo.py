"""The zoo support table: models through build, forward, backward, export to every format and parity."""

from __future__ import annotations

import pytest

from oarkit.core import list_models, model_info
from oarkit.core.export.zoo import check_model, resolve_names, sample_names, zoo_markdown

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

SAMPLE = sample_names("clas/*")


def test_the_sample_covers_every_family_once() -> None:
    families = [model_info(n).family for n in SAMPLE]
    assert sorted(families) == sorted({model_info(n).family for n in list_models("clas/*")})
    assert resolve_names(["clas/pp_lcnet_x0_25", "clas/pp_lcnet_*"])[0] == "clas/pp_lcnet_x0_25"


@pytest.mark.parametrize("name", SAMPLE)
def test_one_model_of_every_family_exports_to_onnx_with_parity(name: str) -> None:
    row = check_model(name)
    assert row.ok, row
    assert row.exports == {"onnx": "pass"} and row.max_rel["onnx"] < 1e-4


def test_every_format_and_the_table() -> None:
    rows = [check_model("clas/pp_lcnet_x0_25", formats=("onnx", "pt2", "openvino", "executorch")),
            check_model("clas/resnet18_vd", formats=())]
    assert rows[0].ok, rows[0]
    assert set(rows[0].exports) == {"onnx", "pt2", "openvino", "executorch"}
    page = zoo_markdown(rows, command="pytest")
    assert "| model | family | params (M) | build | forward | backward | onnx | pt2 | openvino | executorch |" in page
    assert "**2 of 2 models pass every step.**" in page
    assert "| `clas/resnet18_vd` | resnet_vd |" in page and "| ok | ok | ok | - | - | - | - |" in page


def test_a_failing_model_is_a_row_not_an_exception(monkeypatch) -> None:
    import oarkit.core.export.zoo as zoo

    def broken(*args, **kwargs):
        raise RuntimeError("no weights for you")

    monkeypatch.setattr(zoo, "create_model", broken)
    row = check_model("clas/pp_lcnet_x0_25")
    assert not row.ok and row.build == "fail" and "RuntimeError: no weights for you" in row.message


@pytest.mark.slow
def test_every_classification_model_exports_to_onnx(tmp_path) -> None:
    rows = [check_model(n, workdir=tmp_path) for n in list_models("clas/*")]
    failed = [(r.name, r.message) for r in rows if not r.ok]
    assert not failed, failed
