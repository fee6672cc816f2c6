"""A text's prediction does not depend on what it is batched with: dynamic padding comes with an attention mask,
so logits at batch 1 and batch 8 agree (to float rounding: the padded matrices have other shapes) for sequence and
token classification on a tiny random-weight encoder."""

from __future__ import annotations

import functools

import torch

from oarkit.core import create_model
from oarkit.core.engine.evaluation import build_loader

#: the tiny encoder of tests/nlp/conftest.py (random weights)
TINY = functools.partial(create_model, "nlp/bert_tiny_uncased", hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64)


def _outputs(task, model, data) -> tuple[list[torch.Tensor], list[int]]:
    """Per example, in order: the logits (of its real, unpadded positions for token tasks) and its length."""
    dataset = data.val_dataset()
    loader = build_loader(dataset, data, task, train=False, batch_size=int(data.eval_batch_size))
    out: list[torch.Tensor] = []
    lengths: list[int] = []
    with torch.no_grad():
        for batch in loader:
            logits = task.validation_step(model, batch)
            logits = getattr(logits, "logits", logits)
            for i in range(batch["input_ids"].shape[0]):
                mask = batch["attention_mask"][i].bool()
                out.append(logits[i, mask] if logits.dim() == 3 else logits[i])
                lengths.append(int(mask.sum()))
    return out, lengths


def _compare(task_class, data_class, root, tokenizer, **data_kwargs) -> None:
    runs = []
    for batch_size in (1, 8):
        torch.manual_seed(0)
        task = task_class(TINY, tokenizer=str(tokenizer))
        data = data_class(root=str(root), batch_size=batch_size, bucket=False, **data_kwargs)
        model = task.setup(data).eval()
        runs.append(_outputs(task, model, data))
    (alone, lengths), (batched, _) = runs
    assert len(alone) == len(batched) > 8
    assert len(set(lengths)) > 1  # texts of several lengths: batches of 8 were padded
    for a, b in zip(alone, batched, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        assert torch.equal(a.argmax(-1), b.argmax(-1))


def test_text_classification_logits_do_not_depend_on_the_batch(intents_root, tiny_tokenizer) -> None:
    from oarkit.nlp import TextClassificationData, TextClassificationTask

    _compare(TextClassificationTask, TextClassificationData, intents_root, tiny_tokenizer, max_length=32)


def test_token_classification_logits_do_not_depend_on_the_batch(ner_root, tiny_tokenizer) -> None:
    from oarkit.nlp import TokenClassificationData, TokenClassificationTask

    _compare(TokenClassificationTask, TokenClassificationData, ner_root, tiny_tokenizer, max_length=32)
