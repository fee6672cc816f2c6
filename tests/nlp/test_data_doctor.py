"""The dataset doctor on text data: the test sets pass; unknown labels, empty texts and train/dev duplicates."""

from __future__ import annotations

from oarkit.core.data.doctor import check_data_module
from oarkit.nlp import InformationExtractionData, QuestionAnsweringData, TextClassificationData, TokenClassificationData


def test_test_sets_pass(intents_root, ner_root, squad_root, doccano_root):
    for data in (TextClassificationData(root=str(intents_root)), TokenClassificationData(root=str(ner_root)),
                 QuestionAnsweringData(root=str(squad_root)), InformationExtractionData(root=str(doccano_root))):
        report = check_data_module(data)
        assert report.ok, report.table()
        assert report.stats["train"]["samples"] > 0 and report.stats["val"]["samples"] > 0


def test_unknown_label_empty_text_and_duplicates(tmp_path):
    (tmp_path / "train.tsv").write_text("text\tlabel\nbook a table\tbook\nplay some jazz\tmusic\n \tmusic\n")
    (tmp_path / "dev.tsv").write_text("text\tlabel\nBook a  table\tbook\nwhat is the weather\tweather\n")
    report = check_data_module(TextClassificationData(root=str(tmp_path)))
    by_kind = {f.kind: f for f in report.findings}
    assert by_kind["nlp/unknown_label"].severity == "error" and by_kind["nlp/unknown_label"].split == "val"
    assert "weather" in by_kind["nlp/unknown_label"].message
    assert by_kind["nlp/empty_text"].severity == "warning" and by_kind["nlp/empty_text"].split == "train"
    assert by_kind["train_val_duplicate"].files == ["Book a  table"]
