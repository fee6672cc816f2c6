"""Task ids: every card names a registered one, the kits' entries, and a command line that dispatches on them."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from oarkit.core import ConfigError, OarkitError, list_models, model_info
from oarkit.core import kits as kits_module
from oarkit.core.cli import main
from oarkit.core.kits import commands, normalize_task_id, register_task, task_entries, task_entry
from oarkit.core.registry import ImageInput, TextInput

NLP_TASKS = ("nlp/text_classification", "nlp/token_classification", "nlp/question_answering",
             "nlp/information_extraction")


def test_every_card_names_a_registered_task_id() -> None:
    entries = task_entries()
    assert {"clas", "seg", *NLP_TASKS} <= set(entries)
    names = list_models()
    unknown = {n: model_info(n).task for n in names if model_info(n).task not in entries}
    assert len(names) > 100 and not unknown
    assert model_info("timm/convnext_atto").task == "clas"  # namespaced cards too


def test_text_cards_carry_a_text_spec_and_no_image_defaults() -> None:
    text = list_models("nlp/*")
    assert text and all(model_info(n).task.startswith("nlp/") for n in text)
    for name in text:
        card = model_info(name)
        assert isinstance(card.input_spec, TextInput) and card.test_input_size == ()
        with pytest.raises(ConfigError, match="text input spec"):
            _ = card.mean
    assert model_info("nlp/ernie_3_0_medium_zh").input_spec.tokenizer == "nghuyong/ernie-3.0-medium-zh"
    assert model_info("nlp/xlm_roberta_base").input_spec.max_length == 512  # positions start after padding
    assert all(isinstance(model_info(n).input_spec, ImageInput) for n in list_models("seg/*") + list_models("clas/*"))


def test_entries_declare_what_the_tools_need() -> None:
    clas, seg, text, uie = (task_entry(t) for t in ("clas", "seg", "nlp/text_classification",
                                                   "nlp/information_extraction"))
    assert clas.predict_options == ("topk",) and seg.predict_options == () and text.predict_options == ("topk",)
    assert uie.predict_options == () and all(e.export_source is not None for e in (clas, seg, text, uie))
    assert "digits" in clas.datasets and "shapes" in seg.datasets and "intents" in text.datasets
    assert clas.reference_metric({"imagenet_top1": 71.3}) == ("imagenet_top1", 71.3)
    assert seg.reference_metric({"ade20k_miou": 41.6}) == ("ade20k_miou", 41.6) and seg.reference_metric({}) is None
    assert "train-tokenizer" in commands()
    with pytest.raises(OarkitError, match="already registered"):
        register_task(dataclasses.replace(clas, predict_options=()))
    with pytest.raises(OarkitError, match="must start with a kit name"):
        register_task(dataclasses.replace(clas, task_id="nokit/thing"))


def test_legacy_metas_normalise_to_task_ids() -> None:
    assert normalize_task_id({"task": "nlp", "nlp_task": "text_classification"}) == "nlp/text_classification"
    assert normalize_task_id({"task": "nlp", "preprocessing": {"task": "token_classification"}}) \
        == "nlp/token_classification"  # an nlp deploy.yaml of old
    assert normalize_task_id({"task": "seg"}) == "seg" and normalize_task_id({}) == ""


def test_core_cli_holds_no_kit_knowledge() -> None:
    source = (Path(kits_module.__file__).parent / "cli.py").read_text()
    assert not re.search(r"oarkit\.(clas|seg|det|ocr|nlp)\b|imagenet|confusion_matrix|topk=", source)


#: what the engine's code must not name: a kit, an architecture, a loss or a metric (its docs may, as examples)
KIT_WORDS = re.compile(r"oarkit\.(clas|seg|det|ocr|nlp)\b|\b(clas|seg|det|ocr|nlp)/|imagenet|lcnet|liteseg|ppyoloe|"
                       r"picodet|ernie|resnet|yolo|detr|\bdb\b|\bctc|dice\b|focal|cross_?entropy|miou|top_?1|\bmap\b|coco|"
                       r"hmean|accuracy|confusion", re.IGNORECASE)


def _code_words(path: Path) -> list[str]:
    """The names, attributes, imports and string constants of a module, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    words: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            words += [getattr(node, "module", None) or "", *(alias.name for alias in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.append(node.value)
    return words


ENGINE = Path(kits_module.__file__).parent / "engine"


@pytest.mark.parametrize("module", sorted(p.name for p in ENGINE.glob("*.py")))
def test_the_engine_names_no_kit_architecture_loss_or_metric(module: str) -> None:
    path = ENGINE / module
    named = sorted({w for w in _code_words(path) if KIT_WORDS.search(w)})
    assert not named, f"core/engine/{module} names {named}"


def test_the_engine_check_sees_code_and_not_docs(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Logs val_top1 (mIoU for seg)."""\nfrom oarkit.det import Detector  # a comment: ppyoloe\n\n\n'
                      'def f(metrics):\n    """Reads metrics["miou"]."""\n    return metrics["coco_map"], ctc_loss\n')
    assert sorted(w for w in _code_words(module) if KIT_WORDS.search(w)) == ["coco_map", "ctc_loss", "oarkit.det"]


# -- the command line on fabricated runs: a recording predictor stands in for the kit's -------------------------


class _Result:
    def __init__(self, source: str) -> None:
        self.source = source

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source}


@pytest.fixture
def recorded(monkeypatch) -> list[dict[str, Any]]:
    """Replace every entry's predictor by one that records its keyword arguments and inputs."""
    calls: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, source: str, **kwargs: Any) -> None:
            calls.append(dict(kwargs))

        def __call__(self, inputs: list[str]) -> list[_Result]:
            calls[-1]["inputs"] = list(inputs)
            return [_Result(x) for x in inputs]

    for task_id, entry in task_entries().items():
        monkeypatch.setitem(kits_module._ENTRIES, task_id, dataclasses.replace(entry, predictor=Recorder))
    return calls


def _run(root: Path, task: Any, **meta: Any) -> Path:
    """A run directory whose ``best/meta.json`` names ``task`` (enough for the verbs to dispatch; no weights)."""
    (root / "best").mkdir(parents=True)
    (root / "best" / "model.safetensors").write_bytes(b"")
    (root / "best" / "meta.json").write_text(json.dumps({"task": task, **meta}))
    return root


def test_predict_passes_topk_only_to_tasks_that_take_it(recorded, tmp_path, capsys) -> None:
    clas = _run(tmp_path / "clas", "clas")
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.png").write_bytes(b"")
    (images / "notes.txt").write_text("not an image")
    assert main(["predict", str(clas), str(images), "--topk", "2"]) == 0
    assert recorded[-1] == {"device": "cpu", "topk": 2, "inputs": [str(images / "a.png")]}
    assert main(["predict", str(clas), str(images / "a.png")]) == 0
    assert "topk" not in recorded[-1]  # the predictor's own default

    seg = _run(tmp_path / "seg", "seg")
    assert main(["predict", str(seg), str(images / "a.png")]) == 0
    assert recorded[-1] == {"device": "cpu", "inputs": [str(images / "a.png")]}
    capsys.readouterr()
    assert main(["predict", str(seg), str(images / "a.png"), "--topk", "3"]) == 2
    assert "--topk does not apply to 'seg' models" in capsys.readouterr().err

    text = _run(tmp_path / "text", "nlp", nlp_task="text_classification")  # a meta.json from before task ids
    assert main(["predict", str(text), "wake me up", "--topk", "2"]) == 0
    assert recorded[-1] == {"device": "cpu", "topk": 2, "inputs": ["wake me up"]}
    uie = _run(tmp_path / "uie", "nlp/information_extraction")
    assert main(["predict", str(uie), str(images)]) == 0  # a text task takes a folder name as text
    assert recorded[-1] == {"device": "cpu", "inputs": [str(images)]}


def test_summary_lists_the_pictures_of_the_runs_task(tmp_path, capsys) -> None:
    meta = {"main_indicator": "top1", "metrics": {"top1": 0.9}, "epoch": 3, "labels": ["a", "b"],
            "preprocessing": {"crop": [32, 32]}}
    clas = _run(tmp_path / "clas", "clas", **meta)
    text = _run(tmp_path / "text", "nlp/text_classification", **meta)
    for run in (clas, text):
        (run / "confusion_matrix.png").write_bytes(b"")
        (run / "curves.png").write_bytes(b"")
    capsys.readouterr()
    assert main(["summary", str(clas)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"task\s+clas\n", out) and re.search(r"best top1\s+0.9000", out) and "input size" in out
    assert "confusion_matrix.png" in out and "curves.png" in out
    assert main(["summary", str(text)]) == 0
    out = capsys.readouterr().out
    assert "nlp/text_classification" in out and "curves.png" in out and "confusion_matrix.png" not in out


def test_models_shows_each_tasks_card_metric(capsys) -> None:
    capsys.readouterr()
    assert main(["models", "clas/pp_lcnet_x1_0"]) == 0
    assert re.search(r"clas/pp_lcnet_x1_0 +clas +pp_lcnet +71\.32 imagenet_top1", capsys.readouterr().out)
    assert main(["models", "seg/pp_liteseg_stdc1"]) == 0
    assert "73.10 cityscapes_miou" in capsys.readouterr().out
    assert main(["models", "nlp/uie_nano"]) == 0
    assert "nlp/information_extraction" in capsys.readouterr().out
    assert main(["models", "--info", "nlp/uie_nano"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["task"] == "nlp/information_extraction" and card["input_spec"]["modality"] == "text"


def test_prepare_data_gathers_every_kits_datasets(tmp_path, capsys) -> None:
    assert main(["prepare-data", "nothing", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert all(name in err for name in ("digits", "shapes", "intents"))


@pytest.mark.parametrize("verb", [["predict", "{run}", "x.png"], ["eval", "{run}"], ["summary", "{run}"],
                                  ["export", "{run}"]])
def test_an_unknown_task_id_is_a_clear_error(verb: list[str], tmp_path, capsys) -> None:
    run = _run(tmp_path / "run", "clas/retrieval")
    capsys.readouterr()
    assert main([v.format(run=run) for v in verb]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'best' / 'meta.json'} names the task id 'clas/retrieval'" in err and "Known: clas" in err
    assert "Traceback" not in err
