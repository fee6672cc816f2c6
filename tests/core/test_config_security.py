"""The closed config loader: a ``_target_`` names only what recipes need, and a refused config runs nothing.

Every refusal is checked the way a user meets it (a YAML file through ``load_config``, and the CLI) with a
sentinel: the refused call would create ``made`` or delete ``keep``; both are checked afterwards.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from oarkit.core.config import instantiate, load_config, locate, packaged_config_root
from oarkit.core.errors import ConfigError

DEMO = "clas/pp_lcnet_x0_5_digits_32x32"

#: (target, arguments): each would write ``{made}``, delete ``{tmp}``/``{keep}`` or run code if it were built
REFUSED = [
    ("torch.utils.collect_env.run", {"command": "touch {made}"}),
    ("torch.save", {"_args_": [[1], "{made}"]}),
    ("torch.load", {"f": "{keep}", "weights_only": True}),
    ("torch.hub.load", {"repo_or_dir": "{tmp}", "model": "evil", "source": "local"}),
    ("torch.jit.load", {"f": "{keep}"}),
    ("torch.utils.cpp_extension.load_inline", {"name": "evil", "cpp_sources": "int x;"}),
    ("torch._C._log_api_usage_once", {"_args_": ["evil"]}),
    ("torch.ops.load_library", {"path": "{keep}"}),
    ("torch.distributed.run.main", {"args": ["--standalone", "{made}"]}),
    ("torch.utils.data.datapipes.iter.FileOpener", {"datapipe": ["{keep}"]}),
    ("torch.export.save", {"ep": None, "f": "{made}"}),
    ("torch.onnx.export", {"model": None, "args": [], "f": "{made}"}),
    ("torch.nn.functional.relu", {"input": None}),
    ("torch.nn.modules.module.torch.save", {"_args_": [[1], "{made}"]}),  # another package reached through a module
    ("torchvision.utils.save_image", {"tensor": None, "fp": "{made}"}),
    ("torchvision.io.write_file", {"filename": "{made}", "data": None}),
    ("torchvision.datasets.MNIST", {"root": "{made}", "download": True}),
    ("timm.create_model", {"model_name": "resnet18", "checkpoint_path": "{keep}"}),
    ("transformers.AutoModel.from_pretrained", {"pretrained_model_name_or_path": "{tmp}"}),
    ("transformers.AutoConfig", {}),
    ("transformers.pipeline", {"task": "text-classification"}),
    ("albumentations.save", {"transform": None, "filepath_or_buffer": "{made}"}),
    ("subprocess.run", {"args": ["touch", "{made}"]}),
    ("os.system", {"_args_": ["touch {made}"]}),
    ("posix.system", {"_args_": ["touch {made}"]}),
    ("builtins.eval", {"_args_": ["open('{made}', 'w')"]}),
    ("builtins.exec", {"_args_": ["open('{made}', 'w')"]}),
    ("shutil.rmtree", {"path": "{tmp}"}),
    ("tempfile.mkstemp", {"dir": "{tmp}"}),
    ("pathlib.Path.write_text", {"_args_": ["{made}", "pwned"]}),
    ("numpy.save", {"file": "{made}", "arr": [1]}),
    ("oarkit.core.engine.checkpoint.atomic_write_text", {"path": "{made}", "text": "pwned"}),
    ("oarkit.core.config.targets.importlib.import_module", {"_args_": ["os"]}),
    ("oarkit.core.instantiate", {"node": {"_target_": "os.system", "_args_": ["touch {made}"]}}),
    ("oarkit.clas.prepare_digits", {"root": "{made}"}),
    ("oarkit.nlp.train_wordpiece", {"files": [], "out_dir": "{made}"}),
]
REFUSED_TARGETS = [t for t, _ in REFUSED]

#: what recipes may name: one of each kind, including classes no shipped config names yet
ADMITTED = [
    "oarkit.core.create_model", "oarkit.core.registry.create_model", "oarkit.core.engine.schedule.WarmupLR",
    "oarkit.core.quant.QuantizationAwareTraining", "oarkit.core.engine.callbacks.EarlyStopping",
    "oarkit.core.engine.callbacks.StopAfter", "oarkit.clas.ClassificationTask", "oarkit.clas.ClassificationMetric",
    "oarkit.clas.SoftTargetCrossEntropy", "oarkit.seg.OhemCrossEntropyLoss", "oarkit.seg.SegmentationData",
    "oarkit.nlp.TokenClassificationTask", "torch.optim.AdamW", "torch.optim.lr_scheduler.OneCycleLR",
    "torch.optim.lr_scheduler.ReduceLROnPlateau", "torch.nn.Conv2d", "torch.nn.CrossEntropyLoss",
    "torchvision.transforms.Normalize", "torchvision.transforms.v2.RandomResizedCrop", "torchvision.models.resnet18",
    "torchvision.models.get_model", "torchvision.ops.FeaturePyramidNetwork", "albumentations.HorizontalFlip",
    "albumentations.Compose", "albumentations.pytorch.ToTensorV2", "timm.models.resnet.ResNet",
    "transformers.BertConfig", "transformers.BertModel",
]


@pytest.fixture
def sentinel(tmp_path: Path) -> dict[str, Path]:
    keep = tmp_path / "keep"
    keep.write_text("intact")
    return {"made": tmp_path / "made", "keep": keep, "tmp": tmp_path}


def _fill(value, paths: dict[str, Path]):
    if isinstance(value, str):
        return value.format(**{k: str(v) for k, v in paths.items()})
    if isinstance(value, list):
        return [_fill(v, paths) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, paths) for k, v in value.items()}
    return value


def _recipe_with(tmp_path: Path, extra: dict) -> Path:
    """The demo recipe plus ``extra`` top-level sections, written as a user's YAML file."""
    path = tmp_path / "evil_digits_32x32_1e.yaml"
    path.write_text((packaged_config_root() / f"{DEMO}.yaml").read_text() + yaml.safe_dump(extra))
    return path


def _untouched(paths: dict[str, Path]) -> None:
    assert not paths["made"].exists(), "a refused config ran"
    assert paths["keep"].read_text() == "intact", "a refused config ran"


@pytest.mark.parametrize(("target", "args"), REFUSED, ids=REFUSED_TARGETS)
def test_refused_target_names_target_key_file_and_what_is_admitted(tmp_path, sentinel, target, args):
    bad = _recipe_with(tmp_path, {"callbacks": [{"_target_": target, **_fill(args, sentinel)}]})
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    msg = str(err.value)
    assert f"_target_ {target!r} at callbacks[0]._target_ (from file {bad})" in msg and "is refused: " in msg
    assert "A config may name: oarkit component classes" in msg and "torch.optim" in msg and "\n" not in msg
    _untouched(sentinel)


@pytest.mark.parametrize(("target", "why"), [
    ("torch.utils.collect_env.run", "the module torch.utils.collect_env runs processes, writes files or loads code"),
    ("torch.save", "it lives in torch.serialization, a module that runs processes, writes files or loads code"),
    ("torch._C._log_api_usage_once", "'_C' is a private name"),
    ("torch.distributed.run.main", "the module torch.distributed runs processes"),
    ("oarkit.core.engine.checkpoint.atomic_write_text", "the module oarkit.core.engine.checkpoint runs processes"),
    ("os.system", "package 'os' is not one configs may use"),
    ("torch.nn.modules.module.torch.save", "'torch' is the module torch reached through another module"),
    ("transformers.AutoModel.from_pretrained", "is a method"),
    ("oarkit.clas.prepare_digits", "it is a function of oarkit.clas.data.digits, and there configs may name only"),
    ("torchvision.datasets.MNIST", "it is a class of torchvision.datasets.mnist, and there configs may name only"),
])
def test_the_refusal_says_why(target, why):
    with pytest.raises(ConfigError, match="is refused") as err:
        locate(target, where="task")
    assert why in str(err.value)


@pytest.mark.parametrize("target", ADMITTED)
def test_what_recipes_need_is_admitted(target):
    assert callable(locate(target))


def test_a_new_kit_class_is_admitted_without_editing_the_list(monkeypatch):
    """A kit's component classes pass by what they are; a function beside them that writes files does not."""
    module = types.ModuleType("oarkit.det.fake_kit")
    exec(  # noqa: S102  (a module body defined here, so that its classes live in an oarkit kit)
        "from torch import nn\nfrom oarkit.core.engine.task import Task\n"
        "class DetectionTask(Task):\n    pass\n"
        "class DBLoss(nn.Module):\n    pass\n"
        "def write_report(path):\n    open(path, 'w').write('pwned')\n",
        module.__dict__,
    )
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert locate("oarkit.det.fake_kit.DetectionTask") is module.DetectionTask
    assert locate("oarkit.det.fake_kit.DBLoss") is module.DBLoss
    with pytest.raises(ConfigError, match="it is a function of oarkit.det.fake_kit"):
        locate("oarkit.det.fake_kit.write_report")


@pytest.mark.parametrize(("extra", "key"), [
    ({"trust_remote_code": True}, "task.model.trust_remote_code"),
    ({"weights_only": False}, "task.model.weights_only"),
    ({"allow_pickle": True}, "task.model.allow_pickle"),
    ({"pickle_module": "pickle"}, "task.model.pickle_module"),
    ({"config": {"nested": [{"trust_remote_code": True}]}}, "task.model.config.nested[0].trust_remote_code"),
    ({"trust_remote_code": "${trainer.deterministic}"}, "task.model.trust_remote_code"),  # true, once resolved
])
def test_arguments_that_load_code_are_refused_in_any_node(tmp_path, extra, key):
    text = (packaged_config_root() / f"{DEMO}.yaml").read_text()
    text = text.replace("    name: clas/pp_lcnet_x0_5\n", "    name: clas/pp_lcnet_x0_5\n"
                        + "".join(f"    {line}\n" for line in yaml.safe_dump(extra).splitlines()))
    bad = tmp_path / "flags_digits_32x32_1e.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match="is refused: it lets a file or a hub load and run code") as err:
        load_config(bad)
    assert f"{key} (from file {bad})" in str(err.value)


@pytest.mark.parametrize(("target", "args"), [
    ("transformers.AutoModel.from_pretrained", {"pretrained_model_name_or_path": "{tmp}", "trust_remote_code": True}),
    ("numpy.load", {"file": "{keep}", "allow_pickle": True}),
    ("torch.load", {"f": "{keep}", "weights_only": False}),
], ids=["from_pretrained+trust_remote_code", "numpy.load+allow_pickle", "torch.load+weights_only=false"])
def test_code_loading_calls_with_their_flags_are_refused(tmp_path, sentinel, target, args):
    with pytest.raises(ConfigError, match="is refused"):
        load_config(_recipe_with(tmp_path, {"callbacks": [{"_target_": target, **_fill(args, sentinel)}]}))
    _untouched(sentinel)


def test_an_interpolation_cannot_smuggle_a_target_in(tmp_path, sentinel):
    """``${oc.create:...}`` makes a node only when resolved: the check runs on the resolved config too."""
    smuggled = f"${{oc.create:{{_target_: torch.utils.collect_env.run, command: 'touch {sentinel['made']}'}}}}"
    bad = _recipe_with(tmp_path, {"callbacks": [smuggled]})
    with pytest.raises(ConfigError, match=r"'torch.utils.collect_env.run' at callbacks\[0\]._target_"):
        load_config(bad)
    cfg = load_config(DEMO)  # where a resolved node reaches instantiate() without validation (a run's config.yaml)
    cfg.task.model.extra = smuggled
    with pytest.raises(ConfigError, match=r"'torch.utils.collect_env.run' at task.model.extra._target_ is refused"):
        instantiate(cfg.task)
    _untouched(sentinel)


def test_an_escaped_interpolation_is_not_resolved_twice(tmp_path, sentinel):
    """``\\${...}`` resolves to the text ``${...}``, which Hydra would resolve again while building."""
    escaped = f"\\${{oc.create:{{_target_: os.system, _args_: ['touch {sentinel['made']}']}}}}"
    with pytest.raises(ConfigError, match="resolved a second time"):
        load_config(_recipe_with(tmp_path, {"callbacks": [{"_target_": "oarkit.core.engine.callbacks.StopAfter",
                                                           "epochs": escaped}]}))
    node = OmegaConf.create({"_target_": "oarkit.core.engine.callbacks.StopAfter", "epochs": escaped})
    with pytest.raises(ConfigError, match="resolved a second time"):
        instantiate(node)
    _untouched(sentinel)


def test_an_interpolated_target_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="it is an interpolation; write the dotted path itself"):
        load_config(_recipe_with(tmp_path, {"callbacks": [{"_target_": "${output_dir}"}]}))


def test_instantiate_refuses_before_building(sentinel):
    node = {"_target_": "torch.utils.collect_env.run", "command": f"touch {sentinel['made']}"}
    with pytest.raises(ConfigError, match="is refused"):
        instantiate(node)
    with pytest.raises(ConfigError, match="is refused"):
        instantiate({"_target_": "torch.optim.SGD", "_partial_": True}, lr={"_target_": "os.getcwd"})
    _untouched(sentinel)


def test_the_cli_prints_one_error_line_and_returns_2(tmp_path, sentinel, capsys):
    from oarkit.core.cli import main

    bad = _recipe_with(tmp_path, {"callbacks": [{"_target_": "torch.utils.collect_env.run",
                                                 "command": f"touch {sentinel['made']}"}]})
    assert main(["train", "-c", str(bad), f"output_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: _target_ 'torch.utils.collect_env.run' at callbacks[0]")
    assert "Traceback" not in err[0] and str(bad) in err[0]
    _untouched(sentinel)
    assert not (tmp_path / "run").exists()
