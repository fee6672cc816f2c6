"""The model registry: names, duplicates, look-ups, namespaces and building."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from torch import nn

from oarkit.core import (
    ConfigError,
    ModelCard,
    Namespace,
    UnknownNameError,
    create_model,
    list_models,
    model_info,
    register_model,
    register_namespace,
    registry,
)
from oarkit.core.registry import DetectorInput, ImageInput, TextInput


def _tiny(*, num_classes: int = 10, width: int = 4) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(width, num_classes))


@pytest.fixture
def scratch() -> Iterator[list[str]]:
    """Names the test registers (and namespaces it adds), removed again afterwards."""
    names: list[str] = []
    # The kits register theirs (timm/...) on the registry's first use: if that happened inside this test, the
    # cleanup below would take them away from every later test.
    registry._ensure_kits_loaded()
    namespaces = set(registry._NAMESPACES)
    yield names
    for name in names:
        registry._MODELS.pop(name, None)
    for prefix in set(registry._NAMESPACES) - namespaces:
        registry._NAMESPACES.pop(prefix)


def test_register_and_build(scratch: list[str]) -> None:
    scratch.append("test/tiny")
    card = register_model("test/tiny", _tiny, task="clas", num_classes=5, classifier=("1",))
    assert isinstance(card, ModelCard) and model_info("test/tiny") is card
    assert "test/tiny" in list_models("test/*")
    model = create_model("test/tiny", width=3)
    assert model[1].out_features == 5 and model[1].in_features == 3
    assert model.oarkit_name == "test/tiny" and model.oarkit_kwargs == {"num_classes": 5, "width": 3}
    assert create_model("test/tiny", num_classes=2)[1].out_features == 2


def test_decorator_returns_the_factory(scratch: list[str]) -> None:
    scratch.append("test/decorated")

    @register_model("test/decorated", task="clas", num_classes=10)
    def decorated(*, num_classes: int = 1000) -> nn.Module:
        return nn.Linear(2, num_classes)

    assert callable(decorated) and model_info("test/decorated").factory is decorated


def test_duplicate_name_is_an_error(scratch: list[str]) -> None:
    scratch.append("test/twice")
    register_model("test/twice", _tiny, task="clas", num_classes=10)
    with pytest.raises(ConfigError, match="already registered"):
        register_model("test/twice", _tiny, task="clas", num_classes=10)


@pytest.mark.parametrize("name", ["noslash", "a/b/c", "/variant", "kit/", ""])
def test_malformed_name_is_an_error(name: str) -> None:
    with pytest.raises(ConfigError, match="<kit>/<variant>"):
        register_model(name, _tiny, task="clas", num_classes=10)
    assert name not in registry._MODELS


def test_unknown_name_lists_the_closest(scratch: list[str]) -> None:
    scratch.append("test/tiny_model")
    register_model("test/tiny_model", _tiny, task="clas", num_classes=10)
    with pytest.raises(UnknownNameError, match="'test/tiny_model'") as err:
        create_model("test/tiny_modle")
    assert isinstance(err.value, KeyError) and "list_models" in str(err.value)


def test_bad_arguments_are_config_errors(scratch: list[str]) -> None:
    scratch.append("test/tiny")
    register_model("test/tiny", _tiny, task="clas", num_classes=10)
    with pytest.raises(ConfigError, match="num_classes"):
        create_model("test/tiny", num_classes=0)
    with pytest.raises(ConfigError, match="no_such_argument"):
        create_model("test/tiny", no_such_argument=1)


def test_namespace(scratch: list[str]) -> None:
    catalogue = {"alpha": 3, "beta": 4}

    def card(name: str) -> ModelCard | None:
        if name not in catalogue:
            return None
        return ModelCard(name=f"zoo/{name}", task="clas", factory=_tiny, num_classes=catalogue[name])

    register_namespace(Namespace("zoo", card, lambda pattern: [n for n in catalogue if pattern in ("*", n)]))
    assert create_model("zoo/beta")[1].out_features == 4
    assert list_models("zoo/*") == ["zoo/alpha", "zoo/beta"] and "zoo/alpha" not in list_models("*")
    with pytest.raises(UnknownNameError, match="'zoo/alpha'"):
        model_info("zoo/alpah")
    with pytest.raises(ConfigError, match="already registered"):
        register_namespace(Namespace("zoo", card, lambda pattern: []))
    with pytest.raises(ConfigError, match="shadow"):
        register_model("zoo/gamma", _tiny, task="clas", num_classes=10)


def test_card_fields_are_checked(scratch: list[str]) -> None:
    with pytest.raises(ConfigError, match=r"'mean'.*input_spec=ImageInput"):
        register_model("test/old", _tiny, task="clas", num_classes=3, mean=(0.5,))
    with pytest.raises(ConfigError, match="num_classes"):
        register_model("test/old", _tiny, task="clas")
    assert "test/old" not in registry._MODELS


def test_input_spec_per_modality(scratch: list[str]) -> None:
    scratch += ["test/image", "test/text"]
    image = register_model("test/image", _tiny, task="clas", num_classes=3,
                           input_spec=ImageInput(size=(32, 48), mean=(0.5,) * 3, std=(0.5,) * 3, crop_pct=0.9))
    assert image.input_size == (3, 32, 48) and image.mean == (0.5, 0.5, 0.5) and image.crop_pct == 0.9
    text = register_model("test/text", _tiny, task="nlp/text_classification", num_classes=2,
                          input_spec=TextInput(max_length=128, tokenizer="org/tok"))
    with pytest.raises(ConfigError, match=r"test/text .*text input spec.*no image mean"):
        _ = text.mean
    view = json.loads(json.dumps(text.to_dict()))
    assert view["input_spec"] == {"modality": "text", "max_length": 128, "tokenizer": "org/tok"}
    assert view["task"] == "nlp/text_classification" and "factory" not in view
    detector = ModelCard(name="test/det", task="det", factory=_tiny, num_classes=80,
                         input_spec=DetectorInput(size=(640, 640), stride_multiple=32))
    assert detector.input_size == (3, 640, 640) and detector.to_dict()["input_spec"]["stride_multiple"] == 32
    with pytest.raises(ConfigError, match="detector input spec"):
        _ = detector.crop_pct
