"""Distillation on a text classifier: ``distill=dml`` with layer-wise LR decay groups the peer as the task groups
the student (each parameter in one group, each with its ``lr_scale``), and both students learn."""

from __future__ import annotations

from oarkit.core.distill import MutualLearningTask

from .conftest import tiny_model, train_tiny


def test_mutual_learning_groups_the_peer_with_the_task_layerwise_decay(intents_root, tiny_tokenizer, tmp_path):
    from oarkit.nlp import TextClassificationData, TextClassificationTask

    inner = TextClassificationTask(tiny_model(), tokenizer=str(tiny_tokenizer), layerwise_lr_decay=0.8)
    task = MutualLearningTask(inner, alpha=0.5)
    data = TextClassificationData(root=str(intents_root), batch_size=8, max_length=32)
    trainer = train_tiny(task, data, tmp_path / "dml", epochs=1)
    grouped = [id(p) for g in trainer.optimizer.param_groups for p in g["params"]]
    assert len(grouped) == len(set(grouped))  # no parameter in two groups
    peer = {id(p) for p in task.peer.parameters()}
    assert peer <= set(grouped) and {id(p) for p in trainer.model.parameters()} <= set(grouped)
    scales = {g["lr"] for g in trainer.optimizer.param_groups if any(id(p) in peer for p in g["params"])}
    assert len(scales) > 1  # the peer's layers got decayed rates too
    assert trainer.history and float(trainer.history[-1]["train_peer_loss"]) > 0
