"""Configs: every shipped recipe composes and validates; bad keys, types, values and targets fail early."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from oarkit.core.config import load_config, locate, packaged_config_root, packaged_configs
from oarkit.core.config.targets import iter_targets
from oarkit.core.errors import ConfigError

DEMO = "clas/pp_lcnet_x0_5_digits_32x32"


@pytest.mark.parametrize("name", packaged_configs())
def test_every_packaged_recipe_composes_and_validates(name):
    cfg = load_config(name, ["data.root=/nonexistent/but/not/read/yet"])
    assert {"task", "data", "trainer", "output_dir"} <= set(cfg)
    OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.parametrize("path", sorted(str(p.relative_to(packaged_config_root())) for p in
                                        packaged_config_root().rglob("*.yaml") if "_target_" in p.read_text()))
def test_every_target_of_every_shipped_file_is_admitted(path):
    """Group files too (optimizer/, scheduler/, quant/): what a recipe can swap in must pass the closed loader."""
    targets = [node._target_ for _, node in iter_targets(OmegaConf.load(packaged_config_root() / path))]
    assert targets and all(callable(locate(t, where=path)) for t in targets)


def test_recipes_are_named_by_recipe():
    for name in packaged_configs():
        stem = Path(name).name
        assert stem.count("_") >= 3, f"{name}: name it model_dataset_resolution_schedule"


def test_a_file_path_and_a_packaged_name_give_the_same_config():
    by_name = load_config(DEMO)
    by_path = load_config(packaged_config_root() / f"{DEMO}.yaml")
    assert OmegaConf.to_container(by_name) == OmegaConf.to_container(by_path)


def test_command_line_keys_every_kit_honours():
    cfg = load_config(DEMO, ["trainer.max_epochs=3", "trainer.precision=bf16", "trainer.seed=7", "output_dir=runs/x",
                             "data.root=/d", "data.batch_size=8", "data.num_workers=2"])
    assert (cfg.trainer.max_epochs, cfg.trainer.precision, cfg.trainer.seed) == (3, "bf16", 7)
    assert (cfg.output_dir, cfg.data.root, cfg.data.batch_size, cfg.data.num_workers) == ("runs/x", "/d", 8, 2)
    assert cfg.data.seed == 7  # interpolated from trainer.seed


def test_group_override_swaps_the_optimizer():
    cfg = load_config(DEMO, ["optimizer=adamw", "optimizer.lr=0.01"])
    assert cfg.optimizer._target_ == "torch.optim.AdamW" and cfg.optimizer.lr == 0.01


def test_a_valid_argument_absent_from_the_file_can_be_set():
    cfg = load_config(DEMO, ["data.skip_corrupt=true", "trainer.clip_grad_norm=1.0"])
    assert cfg.data.skip_corrupt is True


def test_unknown_override_key_names_key_origin_and_closest():
    with pytest.raises(ConfigError) as err:
        load_config(DEMO, ["trainer.max_epoch=3"])
    msg = str(err.value)
    assert "'trainer.max_epoch'" in msg and "override 'trainer.max_epoch=3'" in msg and "trainer.max_epochs" in msg


def test_unknown_key_in_a_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = (packaged_config_root() / f"{DEMO}.yaml").read_text()
    assert "\n  batch_size:" in text
    bad.write_text(text.replace("\n  batch_size:", "\n  batch_sise:"))
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    msg = str(err.value)
    assert "data.batch_sise" in msg and str(bad) in msg and "batch_size" in msg


def test_unknown_key_from_a_group_file_names_that_file(tmp_path):
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "mine.yaml").write_text("max_epochs: 2\nwarmup: 3\n")
    cfg_text = (packaged_config_root() / f"{DEMO}.yaml").read_text().replace("/trainer: default", "trainer: mine")
    (tmp_path / "exp_digits_32x32_2e.yaml").write_text(cfg_text)
    with pytest.raises(ConfigError, match=r"trainer.warmup.*trainer/mine.yaml"):
        load_config(tmp_path / "exp_digits_32x32_2e.yaml")


def test_wrong_type_and_bad_value_fail_before_work():
    with pytest.raises(ConfigError, match=r"data.batch_size='many'.*expected int"):
        load_config(DEMO, ["data.batch_size=many"])
    with pytest.raises(ConfigError, match=r"trainer.precision='fp8'.*override"):
        load_config(DEMO, ["trainer.precision=fp8"])
    with pytest.raises(ConfigError, match=r"task.model.name.*clas/pp_lcnet_x0_5"):
        load_config(DEMO, ["task.model.name=clas/pp_lcnet_x0_55"])


def test_missing_required_value(tmp_path):
    text = (packaged_config_root() / f"{DEMO}.yaml").read_text().replace("root: data/digits", "root: ???")
    (tmp_path / "need_root_32x32_1e.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"data.root is required.*data.root=VALUE"):
        load_config(tmp_path / "need_root_32x32_1e.yaml")


def test_unknown_config_file_suggests_packaged_names():
    with pytest.raises(ConfigError, match="pp_lcnet_x0_5_digits_32x32"):
        load_config("clas/pp_lcnet_x0_5_digit_32x32")


def test_unknown_top_level_key():
    with pytest.raises(ConfigError, match=r"top-level key 'trainr'.*trainer"):
        load_config(DEMO, ["+trainr.max_epochs=3"])


@pytest.mark.parametrize("target", ["os.system", "subprocess.run", "builtins.eval", "builtins.exec",
                                    "oarkit.core.config.targets.importlib.import_module", "torch.hub.load",
                                    "torch.utils.cpp_extension.load_inline", "posix.system"])
def test_targets_outside_the_allow_list_are_refused(tmp_path, target):
    text = (packaged_config_root() / f"{DEMO}.yaml").read_text()
    text += f"callbacks:\n  - _target_: {target}\n    _args_: ['echo pwned > {tmp_path}/pwned']\n"
    (tmp_path / "evil_digits_32x32_1e.yaml").write_text(text)
    with pytest.raises(ConfigError, match="refused"):
        load_config(tmp_path / "evil_digits_32x32_1e.yaml")
    assert not (tmp_path / "pwned").exists()


def test_refused_target_through_an_override(tmp_path):
    with pytest.raises(ConfigError, match="refused"):
        load_config(DEMO, ["task._target_=os.system"])


def test_trust_remote_code_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="trust_remote_code"):
        load_config(DEMO, ["+task.model.trust_remote_code=true"])
