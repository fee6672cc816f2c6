"""``pretrained=True`` on a Paddle release: download (here from a ``file://`` URL), sha256 check, conversion once into
the cache through the card's mapping, then loading; offline, an error naming the URL and the file to place;
``pretrained="x.pdparams"`` converting a local checkpoint.

The release is built locally: a torch model's weights written in Paddle's layout (the inverse of the card's mapping:
Paddle's names, BatchNorm ``_mean``/``_variance``, Linear weights ``[in, out]``, the dropout scale not yet folded).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from oarkit.core import PretrainedWeights, WeightsError, create_model, hub, register_model, registry
from oarkit.core.interop import PaddleMapping
from oarkit.core.interop import pdparams as pdparams_module

SCALE = 0.8  # a head scale folded at conversion, as PaddleClas's downscale_in_infer dropout is


class Tiny(nn.Module):
    """A conv-BN stem and a linear head, in oarkit's names."""

    def __init__(self, *, num_classes: int = 5) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.bn(self.stem(x)).mean((2, 3)))


MAPPING = PaddleMapping(renames=[(r"^conv1\._conv\.", "stem."), (r"^conv1\._batch_norm\.", "bn."), (r"^fc\.", "head.")],
                        transforms=[(r"^head\.weight$", lambda w: w * SCALE)], source="tests: Tiny")


def _paddle_layout(model: Tiny) -> dict[str, np.ndarray]:
    """``model``'s weights as Paddle would save them (the inverse of MAPPING)."""
    state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    return {"conv1._conv.weight": state["stem.weight"],
            **{f"conv1._batch_norm.{p}": state[f"bn.{t}"] for p, t in
               (("weight", "weight"), ("bias", "bias"), ("_mean", "running_mean"), ("_variance", "running_var"))},
            "fc.weight": (state["head.weight"] / SCALE).T.copy(), "fc.bias": state["head.bias"]}


def _release(path: Path, num_classes: int = 5, seed: int = 0) -> tuple[Path, Tiny]:
    """A ``.pdparams`` of a randomly initialised Tiny (BatchNorm statistics perturbed) and the model itself."""
    torch.manual_seed(seed)
    model = Tiny(num_classes=num_classes).eval()
    with torch.no_grad():
        model.bn.running_mean.normal_()
        model.bn.running_var.uniform_(0.5, 2.0)
    saved = {**_paddle_layout(model), "StructuredToParameterName@@": {"fc.weight": "linear_0.w_0"}}
    path.write_bytes(pickle.dumps(saved, protocol=4))
    return path, model


def _same(a: nn.Module, b: nn.Module) -> None:
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(a.eval()(x), b.eval()(x), rtol=1e-6, atol=1e-6)


@pytest.fixture
def register() -> Iterator:
    """``register(name, **card)`` for this test only."""
    names: list[str] = []

    def add(name: str, **card) -> str:
        names.append(name)
        card.setdefault("paddle_mapping", MAPPING)
        register_model(name, lambda *, num_classes=5: Tiny(num_classes=num_classes), task="clas", num_classes=5,
                       classifier=("head",), **card)
        return name

    yield add
    for name in names:
        registry._MODELS.pop(name, None)


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    original = pdparams_module.read_pdparams

    def counting(path):
        reads.append(Path(path))
        return original(path)

    monkeypatch.setattr(pdparams_module, "read_pdparams", counting)
    return reads


def test_release_downloads_converts_once_and_loads(register, home: Path, no_network: list,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    source, reference = _release(home / "Tiny_pretrained.pdparams")
    weights = PretrainedWeights(url=source.as_uri(), sha256=hub.sha256_of(source), format="pdparams",
                                license="Apache-2.0", source="tests")
    name = register("test/paddle_release", weights=weights)
    reads = _count_reads(monkeypatch)

    model = create_model(name, pretrained=True)
    _same(model, reference)
    cached = hub.cached_path(weights, name)
    converted = cached.with_name(f"{cached.name}.test--paddle_release.safetensors")
    assert cached.read_bytes() == source.read_bytes() and converted.is_file() and len(reads) == 1
    assert json.loads(converted.with_suffix(".json").read_text())["source_sha256"] == weights.sha256

    _same(create_model(name, pretrained=True), reference)  # the converted file is reused
    fresh_head = create_model(name, pretrained=True, num_classes=2)  # another head: the backbone is kept
    assert torch.equal(fresh_head.stem.weight, reference.stem.weight) and fresh_head.head.out_features == 2
    _same(create_model(name, pretrained=True), reference)  # and the cache still holds the release's head
    assert len(reads) == 1 and not no_network

    # A converted file written by another oarkit version (or from another source) is converted again.
    marker = converted.with_suffix(".json")
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "oarkit": "0.0.0"}))
    _same(create_model(name, pretrained=True), reference)
    assert len(reads) == 2 and json.loads(marker.read_text())["oarkit"] != "0.0.0"


def test_release_with_a_wrong_sha256_is_refused(register, home: Path) -> None:
    source, _ = _release(home / "Tiny_pretrained.pdparams")
    name = register("test/paddle_corrupt", weights=PretrainedWeights(url=source.as_uri(), sha256="0" * 64,
                                                                      format="pdparams"))
    with pytest.raises(WeightsError, match="sha256"):
        create_model(name, pretrained=True)


def test_offline_names_the_url_and_the_file_to_place(register, home: Path, no_network: list,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    url = "https://paddle-models.example.invalid/dygraph/Tiny_pretrained.pdparams"
    weights = PretrainedWeights(url=url, format="pdparams", license="Apache-2.0")
    name = register("test/paddle_offline", weights=weights)
    with pytest.raises(WeightsError, match="HF_HUB_OFFLINE=1") as err:
        create_model(name, pretrained=True)
    target = hub.cached_path(weights, name)
    assert url in str(err.value) and str(target) in str(err.value) and not no_network
    assert target.name == "dygraph--Tiny_pretrained.pdparams"  # Paddle releases keep their folder in the name
    # Placing the file where the message says is all it takes.
    _, reference = _release(target)
    _same(create_model(name, pretrained=True), reference)


def test_local_pdparams_converts_with_its_own_head(register, tmp_path: Path) -> None:
    name = register("test/paddle_local")
    path, reference = _release(tmp_path / "finetuned.pdparams", num_classes=7)
    _same(create_model(name, pretrained=str(path), num_classes=7), reference)  # a fine-tuned 7-class checkpoint
    model = create_model(name, pretrained=path)  # the card's 5 classes: backbone kept, fresh head
    assert torch.equal(model.stem.weight, reference.stem.weight) and model.head.out_features == 5
    with pytest.raises(WeightsError, match="does not exist"):
        create_model(name, pretrained=tmp_path / "absent.pdparams")


def test_a_card_without_a_mapping_is_refused_before_any_download(register, home: Path, no_network: list) -> None:
    weights = PretrainedWeights(url="https://example.invalid/Tiny_pretrained.pdparams", format="pdparams")
    name = register("test/paddle_unmapped", weights=weights, paddle_mapping=None)
    with pytest.raises(WeightsError, match="declares no Paddle mapping"):
        create_model(name, pretrained=True)
    assert not hub.cached_path(weights, name).parent.exists() and not no_network
