"""A trained model directory brought back to life: its module, meta.json, config, task and data.

Every consumer of a run — ``oarkit eval``, export, the predictors — rebuilds it here, once: the task from the
run's config (or the default task of its task id) restored from meta.json, the data module from the config (on
another root when asked) configured by the restored task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.utils.data import Dataset

from oarkit.core.engine.task import DataModule, Task
from oarkit.core.errors import ConfigError, OarkitError

T = TypeVar("T", bound=Task)


@dataclass
class TrainedModel:
    """A model directory: the trained module, its meta.json and its resolved config.

    Attributes:
        folder: the model directory (a run's ``best/`` or ``last/``, or a converted model).
        model: the trained module, in eval mode.
        meta: the directory's ``meta.json``.
        config: its ``config.yaml`` (empty when the directory has none).
    """

    folder: Path
    model: nn.Module
    meta: dict[str, Any]
    config: DictConfig

    @classmethod
    def load(cls, folder: str | Path) -> TrainedModel:
        from oarkit.core.engine.checkpoint import CONFIG_FILE, load_model_dir

        folder = Path(folder)
        model, meta = load_model_dir(folder)
        config_file = folder / CONFIG_FILE
        config = OmegaConf.load(config_file) if config_file.exists() else OmegaConf.create({})
        return cls(folder=folder, model=model.eval(), meta=meta, config=config)

    @property
    def run_dir(self) -> Path:
        """The run the directory belongs to (its parent for ``best/``, ``last/`` and their swap leftovers)."""
        name = self.folder.name
        return self.folder.parent if name in ("best", "last") or name.startswith(".") else self.folder

    @property
    def output_dir(self) -> Path:
        """Where its exports go by default: ``<run>/export``."""
        return self.run_dir / "export"

    @property
    def task_id(self) -> str:
        """The task id meta.json records (``clas``, ``seg``, ``nlp/text_classification``, ...)."""
        from oarkit.core.kits import normalize_task_id

        return normalize_task_id(self.meta)

    def data_config(self) -> dict[str, Any]:
        """The scalar settings of the run's ``data`` section (root, format, list files, ...), unresolved."""
        data = OmegaConf.to_container(self.config.get("data") or OmegaConf.create({}), resolve=False)
        return {k: v for k, v in data.items() if isinstance(v, (str, int, float, bool, type(None)))}

    def restored_task(self, expected: type[T] = Task) -> T:  # type: ignore[assignment]
        """The run's task, instantiated from its config (else its task id's default) and restored from meta.json.

        Raises:
            OarkitError: the config names a task of another kind than ``expected``.
        """
        from oarkit.core.config import instantiate
        from oarkit.core.kits import task_entry

        task_cfg = self.config.get("task")
        if task_cfg is not None and "_target_" in task_cfg:
            task = instantiate(task_cfg)
        else:
            task_class = task_entry(self.task_id).task_class
            if task_class is None:
                raise OarkitError(f"{self.folder} names the task id {self.task_id!r}, which has no trainable task")
            task = task_class()
        if not isinstance(task, expected):
            raise OarkitError(f"{self.folder} was trained with {type(task).__name__}, not a {expected.__name__}")
        task.restore(self.meta)
        return task

    def data_module(self, task: Task, *, data_root: str | None = None, batch_size: int | None = None) -> DataModule:
        """The run's data module (on ``data_root`` when given), configured by the restored ``task``.

        Raises:
            ConfigError: the run names no data and no ``data_root`` was given.
        """
        from oarkit.core.config import instantiate

        data_cfg = self.config.get("data")
        if data_cfg is not None and "_target_" in data_cfg:
            data_cfg = data_cfg.copy()
            if data_root:
                data_cfg.root = str(data_root)
            if not data_cfg.get("root"):
                raise ConfigError(f"{self.folder} does not say which data it was trained on; pass --data ROOT")
            data = instantiate(data_cfg)
        else:
            if not data_root:
                raise ConfigError(f"{self.folder} does not say which data it was trained on; pass --data ROOT")
            data = task.default_data(str(data_root))
            if data is None:
                raise ConfigError(f"{self.folder} has no data config and {type(task).__name__} has no default data "
                                  "module; evaluate it with a config (tools/train.py writes one into each run)")
        if batch_size:
            data.batch_size = data.eval_batch_size = int(batch_size)
        task.configure_data(data)
        return data

    def dataset_factory(self, task: Task) -> Callable[[str, str], Dataset | None]:
        """``(data_root, split) -> dataset`` with the evaluation preprocessing (export calibration and metrics);
        ``None`` when neither the run nor the caller names a dataset."""

        def make(root: str, split: str) -> Dataset | None:
            if not (root or self.data_config().get("root")):
                return None
            return self.data_module(task, data_root=root or None).dataset(split)

        return make
