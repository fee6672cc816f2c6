"""The model registry: names, duplicates, look-ups, namespaces and building."""

from __future__ import annotations

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


def _tiny(*, num_classes: int = 10, width: int = 4) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(width, num_classes))


@pytest.fixture
def scratch() -> Iterator[list[str]]:
    """Names the test registers (and namespaces it adds), removed again afterwards."""
    names: list[str] = []
    namespaces = set(registry._NAMESPACES)
    yield names
    for name in names:
        registry._MODELS.pop(name, None)
    for prefix in set(registry._NAMESPACES) - namespaces:
        registry._NAMESPACES.pop(prefix)


def test_register_and_build(scratch: list[str]) -> None:
    scratch.append("test/tiny")
    card = register_model("test/tiny", _tiny, task="classification", num_classes=5, classifier=("1",))
    assert isinstance(card, ModelCard) and model_info("test/tiny") is card
    assert "test/tiny" in list_models("test/*")
    model = create_model("test/tiny", width=3)
    assert model[1].out_features == 5 and model[1].in_features == 3
    assert model.oarkit_name == "test/tiny" and model.oarkit_kwargs == {"num_classes": 5, "width": 3}
    assert create_model("test/tiny", num_classes=2)[1].out_features == 2


def test_decorator_returns_the_factory(scratch: list[str]) -> None:
    scratch.append("test/decorated")

    @register_model("test/decorated", task="classification")
    def decorated(*, num_classes: int = 1000) -> nn.Module:
        return nn.Linear(2, num_classes)

    assert callable(decorated) and model_info("test/decorated").factory is decorated


def test_duplicate_name_is_an_error(scratch: list[str]) -> None:
    scratch.append("test/twice")
    register_model("test/twice", _tiny, task="classification")
    with pytest.raises(ConfigError, match="already registered"):
        register_model("test/twice", _tiny, task="classification")


@pytest.mark.parametrize("name", ["noslash", "a/b/c", "/variant", "kit/", ""])
def test_malformed_name_is_an_error(name: str) -> None:
    with pytest.raises(ConfigError, match="<kit>/<variant>"):
        register_model(name, _tiny, task="classification")
    assert name not in registry._MODELS


def test_unknown_name_lists_the_closest(scratch: list[str]) -> None:
    scratch.append("test/tiny_model")
    register_model("test/tiny_model", _tiny, task="classification")
    with pytest.raises(UnknownNameError, match="'test/tiny_model'") as err:
        create_model("test/tiny_modle")
    assert isinstance(err.value, KeyError) and "list_models" in str(err.value)


def test_bad_arguments_are_config_errors(scratch: list[str]) -> None:
    scratch.append("test/tiny")
    register_model("test/tiny", _tiny, task="classification")
    with pytest.raises(ConfigError, match="num_classes"):
        create_model("test/tiny", num_classes=0)
    with pytest.raises(ConfigError, match="no_such_argument"):
        create_model("test/tiny", no_such_argument=1)


def test_namespace(scratch: list[str]) -> None:
    catalogue = {"alpha": 3, "beta": 4}

    def card(name: str) -> ModelCard | None:
        if name not in catalogue:
            return None
        return ModelCard(name=f"zoo/{name}", task="classification", factory=_tiny, num_classes=catalogue[name])

    register_namespace(Namespace("zoo", card, lambda pattern: [n for n in catalogue if pattern in ("*", n)]))
    assert create_model("zoo/beta")[1].out_features == 4
    assert list_models("zoo/*") == ["zoo/alpha", "zoo/beta"] and "zoo/alpha" not in list_models("*")
    with pytest.raises(UnknownNameError, match="'zoo/alpha'"):
        model_info("zoo/alpah")
    with pytest.raises(ConfigError, match="already registered"):
        register_namespace(Namespace("zoo", card, lambda pattern: []))
    with pytest.raises(ConfigError, match="shadow"):
        register_model("zoo/gamma", _tiny, task="classification")
