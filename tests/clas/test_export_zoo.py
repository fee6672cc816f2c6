"""The zoo support table: models through build, forward, backward, ONNX export and parity."""

from __future__ import annotations

import pytest

from oarkit.core import list_models, model_info
from oarkit.core.export.zoo import check_model, resolve_names, sample_names, zoo_markdown

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

SAMPLE = sample_names("clas/*")
#: the fast subset that goes through ONNX: the PaddleClas families the demo and benchmarks use
FAST_ONNX = ["clas/pp_lcnet_x0_25", "clas/resnet18_vd", "clas/mobilenetv3_small_x0_35"]


def test_the_sample_covers_every_family() -> None:
    assert {model_info(n).family for n in SAMPLE} == {model_info(n).family for n in list_models("clas/*")}
    assert set(FAST_ONNX) <= set(resolve_names(["clas/pp_lcnet_x0_25", "clas/resnet18_vd",
                                                "clas/mobilenetv3_small_x0_35"]))


@pytest.mark.parametrize("name", FAST_ONNX)
def test_fast_models_export_to_onnx_with_parity(name: str) -> None:
    row = check_model(name)
    assert row.ok, row
    assert row.max_rel < 1e-4


@pytest.mark.slow
def test_one_model_of_every_family_exports_to_onnx(tmp_path) -> None:
    rows = [check_model(n) for n in SAMPLE]
    page = zoo_markdown(rows, command="pytest")
    assert page.count("\n| `clas/") == len(SAMPLE)
    failed = [(r.name, r.message) for r in rows if not r.ok]
    assert not failed, failed
