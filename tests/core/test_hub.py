"""Pretrained weights: local files, the cache, sha256 checks, offline hints and head re-initialisation."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from oarkit.core import PretrainedWeights, WeightsError, create_model, hub, register_model, registry


class Tiny(nn.Module):
    """A backbone (conv + batch norm) and a linear head ``fc``."""

    def __init__(self, *, num_classes: int = 10) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.bn(self.conv(x)).mean((2, 3)))


def _tiny(*, num_classes: int = 10) -> nn.Module:
    return Tiny(num_classes=num_classes)


@pytest.fixture
def register() -> Iterator:
    """``register(name, **card)`` for this test only: the names are removed from the registry afterwards."""
    names: list[str] = []

    def add(name: str, **card) -> str:
        names.append(name)
        register_model(name, _tiny, task="clas", num_classes=10, classifier=("fc",), **card)
        return name

    yield add
    for name in names:
        registry._MODELS.pop(name, None)


def _checkpoint(tmp_path: Path, suffix: str, num_classes: int = 10) -> tuple[Path, dict[str, torch.Tensor]]:
    torch.manual_seed(1)
    state = {k: v.clone() for k, v in Tiny(num_classes=num_classes).state_dict().items()}
    path = tmp_path / f"weights{suffix}"
    if suffix == ".safetensors":
        save_file(state, str(path))
    else:
        torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, path)  # DDP-style wrapping
    return path, state


@pytest.mark.parametrize("suffix", [".safetensors", ".pth"])
def test_local_file_other_num_classes_keeps_backbone(register, tmp_path: Path, suffix: str) -> None:
    path, state = _checkpoint(tmp_path, suffix)
    name = register("test/hub_local")
    model = create_model(name, pretrained=str(path), num_classes=3)
    assert torch.equal(model.conv.weight, state["conv.weight"])
    assert torch.equal(model.bn.running_mean, state["bn.running_mean"])
    assert model.fc.weight.shape == (3, 4) and model.fc.bias.shape == (3,)
    same = create_model(name, pretrained=path)
    assert torch.equal(same.fc.weight, state["fc.weight"])


def test_backbone_only_checkpoint_loads_with_a_fresh_head(register, tmp_path: Path) -> None:
    path, state = _checkpoint(tmp_path, ".safetensors")
    save_file({k: v for k, v in state.items() if not k.startswith("fc.")}, str(path))
    model = create_model(register("test/hub_backbone"), pretrained=path, num_classes=3)
    assert torch.equal(model.conv.weight, state["conv.weight"]) and model.fc.weight.shape == (3, 4)


def test_checkpoint_without_batchnorm_counters_loads(register, tmp_path: Path) -> None:
    path, state = _checkpoint(tmp_path, ".pth")
    torch.save({k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}, path)
    model = create_model(register("test/hub_old_bn"), pretrained=path)
    assert torch.equal(model.bn.running_var, state["bn.running_var"])


def test_backbone_mismatch_is_an_error(register, tmp_path: Path) -> None:
    path, state = _checkpoint(tmp_path, ".safetensors")
    save_file({**state, "conv.weight": torch.zeros(8, 3, 3, 3), "extra": torch.zeros(1)}, str(path))
    with pytest.raises(WeightsError, match="shape mismatch .*conv.weight.*unexpected .*extra"):
        create_model(register("test/hub_mismatch"), pretrained=path)


def test_missing_local_file_is_an_error(register, tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="does not exist"):
        create_model(register("test/hub_missing"), pretrained=tmp_path / "nope.safetensors")


def _cached(home: Path, register, name: str, sha256: str = "") -> dict[str, torch.Tensor]:
    """Register ``name`` with hub weights already in the oarkit cache; ``sha256`` defaults to the right one."""
    path, state = _checkpoint(home, ".safetensors")
    weights = PretrainedWeights(hub_id="oarkit-test/tiny", file_name="model.safetensors",
                                sha256=sha256 or hub.sha256_of(path), license="MIT", source="tests")
    target = hub.cached_path(weights, register(name, weights=weights))
    target.parent.mkdir(parents=True)
    shutil.copyfile(path, target)
    return state


def test_cached_weights_with_the_right_sha256_load(register, home: Path, no_network: list) -> None:
    name = "test/hub_cached"
    state = _cached(home, register, name)
    model = create_model(name, pretrained=True)
    assert torch.equal(model.fc.weight, state["fc.weight"])
    assert create_model(name, pretrained=True, num_classes=2).fc.out_features == 2
    assert not no_network


def test_cached_weights_with_a_wrong_sha256_are_refused(register, home: Path, no_network: list) -> None:
    name = "test/hub_corrupt"
    _cached(home, register, name, sha256="0" * 64)
    with pytest.raises(WeightsError, match="sha256"):
        create_model(name, pretrained=True)
    assert not no_network


def test_first_download_digest_is_recorded_and_enforced(register, home: Path, no_network: list) -> None:
    name = register("test/hub_record", weights=PretrainedWeights(hub_id="oarkit-test/rec", file_name="w.safetensors"))
    card = registry._MODELS[name]
    target = hub.cached_path(card.weights, name)
    target.parent.mkdir(parents=True)
    shutil.copyfile(_checkpoint(home, ".safetensors")[0], target)
    create_model(name, pretrained=True)
    assert target.with_name(target.name + ".sha256").read_text().strip() == hub.sha256_of(target)
    save_file({"conv.weight": torch.zeros(1)}, str(target))  # the cached file changes behind our back
    with pytest.raises(WeightsError, match="sha256"):
        create_model(name, pretrained=True)


def test_missing_cache_offline_gives_a_hint(register, home: Path, no_network: list,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    weights = PretrainedWeights(hub_id="oarkit-test/absent", file_name="model.safetensors", license="MIT")
    name = register("test/hub_offline", weights=weights)
    with pytest.raises(WeightsError, match="HF_HUB_OFFLINE=1.*pretrained='path/to/file'") as err:
        create_model(name, pretrained=True)
    assert "oarkit-test/absent" in str(err.value) and str(home) in str(err.value)
    assert not no_network


def test_no_registered_weights(register) -> None:
    with pytest.raises(WeightsError, match="no registered weights"):
        create_model(register("test/hub_none"), pretrained=True)


def test_paddle_weights_without_a_mapping_are_refused(register, tmp_path: Path, no_network: list) -> None:
    weights = PretrainedWeights(url="https://example.invalid/Tiny_pretrained.pdparams", format="pdparams",
                                license="Apache-2.0", source="PaddleClas")
    name = register("test/hub_paddle", weights=weights)
    with pytest.raises(WeightsError, match="declares no Paddle mapping"):
        create_model(name, pretrained=True)
    with pytest.raises(WeightsError, match="declares no Paddle mapping"):
        create_model(name, pretrained=tmp_path / "local.pdparams")
    assert not no_network


# ----------------------------------------------------------------------------- pretrained="auto"
def test_auto_loads_weights_that_can_be_had(register, tmp_path, monkeypatch):
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "home"))
    path, state = _checkpoint(tmp_path, ".safetensors")
    name = register("test/auto_local", weights=PretrainedWeights(url=path.as_uri(), file_name="auto.safetensors"))
    model = create_model(name, pretrained="auto", num_classes=3)  # file: URLs fetch offline too
    assert torch.equal(model.state_dict()["conv.weight"], state["conv.weight"])
    assert model.fc.out_features == 3


def test_auto_starts_from_scratch_offline_in_one_line(register, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name = register("test/auto_offline", weights=PretrainedWeights(url="https://example.invalid/w.safetensors"))
    with caplog.at_level("INFO", logger="oarkit.core.registry"):
        model = create_model(name, pretrained="auto")
    lines = [r.getMessage() for r in caplog.records if "from scratch" in r.getMessage()]
    assert len(lines) == 1 and "offline" in lines[0] and "\n" not in lines[0]
    assert isinstance(model, Tiny)
    with pytest.raises(WeightsError, match="offline"):  # pretrained=True still fails, naming the way out
        create_model(name, pretrained=True)


def test_auto_without_registered_weights_says_so(register, caplog):
    name = register("test/auto_none")
    with caplog.at_level("INFO", logger="oarkit.core.registry"):
        create_model(name, pretrained="auto")
    assert any("no pretrained weights are registered" in r.getMessage() for r in caplog.records)


def test_auto_does_not_hide_weights_that_do_not_fit(register, tmp_path, monkeypatch):
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "home"))
    bad = tmp_path / "bad.safetensors"
    save_file({"conv.weight": torch.zeros(1, 1, 1, 1)}, str(bad))
    name = register("test/auto_bad", weights=PretrainedWeights(url=bad.as_uri(), file_name="bad.safetensors"))
    with pytest.raises(WeightsError, match="does not fit"):
        create_model(name, pretrained="auto")
