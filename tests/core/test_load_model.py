"""``oarkit.core.load_model``: a self-describing model directory comes back with its own architecture and weights,
through the kit of its task id; a directory that is none of these is refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from oarkit.core import DataError, OarkitError, WeightsError, create_model, load_model, model_info
from oarkit.core.engine.checkpoint import contiguous_state, write_model_dir
from oarkit.core.kits import task_entry

# (registry name, keyword arguments the directory records, input shape)
CASES = {"clas": ("clas/pp_lcnet_x0_25", {"num_classes": 3}, (1, 3, 32, 32)),
         "seg": ("seg/pp_mobileseg_tiny", {"num_classes": 4}, (1, 3, 64, 64))}


def _model_dir(path: Path, name: str, kwargs: dict[str, Any]) -> tuple[Path, torch.nn.Module]:
    """A model directory as the kit describes its own models, holding randomly initialised weights."""
    torch.manual_seed(0)
    model = create_model(name, **kwargs).eval()
    meta = dict(task_entry(model_info(name).task).export_source(name, pretrained=False).meta)
    meta["model"] = {"name": name, "kwargs": model.oarkit_kwargs}
    write_model_dir(path, weights=contiguous_state(model), meta=meta, config_yaml="{}\n")
    return path, model


@pytest.fixture(scope="module", params=sorted(CASES))
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    name, kwargs, shape = CASES[request.param]
    run = tmp_path_factory.mktemp(request.param)
    _, model = _model_dir(run / "best", name, kwargs)
    return run, model, name, kwargs, shape


def test_a_run_directory_comes_back_with_its_architecture_and_weights(saved) -> None:
    run, original, name, kwargs, shape = saved
    for source in (run, run / "best"):  # a run directory means its best/
        model = load_model(source)
        assert not model.training and model.oarkit_name == name and model.oarkit_kwargs == kwargs
        x = torch.randn(shape)
        with torch.no_grad():
            torch.testing.assert_close(model(x), original(x), rtol=0, atol=0)


def test_a_run_with_only_last_loads_last(tmp_path: Path) -> None:
    name, kwargs, _ = CASES["clas"]
    _model_dir(tmp_path / "last", name, kwargs)
    assert load_model(tmp_path).oarkit_kwargs == kwargs


def test_missing_and_foreign_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_model(tmp_path / "absent")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "weights.bin").write_bytes(b"\0")
    with pytest.raises(DataError, match="neither a run directory"):
        load_model(tmp_path / "foreign")
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "deploy.yaml").write_text("task: clas\n")
    with pytest.raises(DataError, match="export folder"):
        load_model(tmp_path / "export")


def _edit_meta(folder: Path, **changes: Any) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(changes)
    (folder / "meta.json").write_text(json.dumps(meta))


def test_unknown_task_id_and_unknown_model_are_refused(tmp_path: Path) -> None:
    name, kwargs, _ = CASES["clas"]
    folder, _ = _model_dir(tmp_path / "model", name, kwargs)
    _edit_meta(folder, task="clss")
    with pytest.raises(OarkitError, match=r"meta.json names the task id 'clss'.*clas"):
        load_model(folder)
    _edit_meta(folder, task="clas", model={"name": "clas/pp_lcnet_x9", "kwargs": {}})
    with pytest.raises(WeightsError, match=r"names the model 'clas/pp_lcnet_x9'.*pp_lcnet_x"):
        load_model(folder)
    _edit_meta(folder, model={})
    with pytest.raises(WeightsError, match="names no registry model"):
        load_model(folder)
