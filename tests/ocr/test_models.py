"""Every ocr/ model builds, keeps the forward contract of oarkit.ocr.models (eval and training outputs), and runs
backward; re-parameterizable models fold with equal outputs."""

from __future__ import annotations

import pytest
import torch

from oarkit.core.registry import create_model, list_models, model_info

NAMES = list_models("ocr/*")


def _randomize_norms(model: torch.nn.Module) -> None:
    """Non-trivial BatchNorm statistics and affine blocks, so that folding is tested on more than identities."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.copy_(torch.randn(module.num_features, generator=gen) * 0.1)
                module.running_var.copy_(torch.rand(module.num_features, generator=gen) + 0.5)
                module.weight.copy_(torch.rand(module.num_features, generator=gen) + 0.5)
                module.bias.copy_(torch.randn(module.num_features, generator=gen) * 0.1)
            elif name.endswith(".lab"):
                module.scale.fill_(1.1)
                module.bias.fill_(0.05)


def _targets(model: torch.nn.Module, batch: int, length: int = 5) -> dict[str, torch.Tensor]:
    chars = torch.randint(1, model.num_classes, (batch, length))
    gtc = torch.zeros(batch, length + 3, dtype=torch.long)
    gtc[:, 0], gtc[:, 1:length + 1], gtc[:, length + 1] = 2, chars + 3, 3
    start = model.num_classes  # SAR: characters 0..n-2 (n-1 of them), <UKN> n-1, <BOS/EOS> n, <PAD> n+1
    sar = torch.full((batch, length + 3), start + 1, dtype=torch.long)
    sar[:, 0], sar[:, 1:length + 1], sar[:, length + 1] = start, chars - 1, start
    return {"label_ctc": chars, "length": torch.full((batch,), length), "label_gtc": gtc, "label_sar": sar,
            "valid_ratio": torch.tensor([1.0, 0.5])[:batch]}


@pytest.mark.parametrize("name", NAMES)
def test_every_ocr_model_keeps_the_contract(name: str):
    card = model_info(name)
    torch.manual_seed(0)
    model = create_model(name, **({"max_text_length": 16} if card.task == "ocr/table" else {}))
    small = "large" in card.tags  # the server-size networks run on the smallest input their strides allow
    height, width = (32, 32) if small else (64, 96)
    if card.task == "ocr/det":
        x = torch.randn(2, 3, height, width)
    elif card.task == "ocr/rec":
        width = 32 if small else 64
        x = torch.randn(2, 3, model.image_height, width)
    else:
        x = torch.randn(2, *card.test_input_size)
    model.eval()
    with torch.no_grad():
        out = model(x)
    if card.task == "ocr/det":
        assert out.shape == (2, 1, height, width) and out.min() >= 0 and out.max() <= 1
    elif card.task == "ocr/rec":
        steps = width // (8 if model.image_height == 48 else 4)
        assert out.shape == (2, steps, model.num_classes) == (2, steps, card.num_classes)
        torch.testing.assert_close(out.sum(-1), torch.ones(2, steps))
        assert isinstance(model.character_dict, str) and card.label_names == model.character_dict
    elif card.task == "ocr/table":
        probs, locs = out["structure_probs"], out["loc_preds"]
        assert probs.shape[0] == 2 and probs.shape[2] == card.num_classes and locs.shape == (*probs.shape[:2], 8)
        torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:2]))
    else:
        assert out.shape == (2, 2) and len(model.labels) == 2
        torch.testing.assert_close(out.sum(-1), torch.ones(2))

    model.train()
    if card.task == "ocr/det":
        maps = model(x)["maps"]
        assert maps.shape == (2, 3, height, width)
        loss = maps.mean()
    elif card.task == "ocr/rec":
        targets = _targets(model, 2)
        outs = model(x, targets)
        assert outs["ctc"].shape[-1] == model.num_classes
        guidance = sorted(set(outs) - {"ctc"})
        assert len(guidance) == (1 if model.guidance_classes else 0)
        steps = {"nrtr": 6, "sar": targets["label_sar"].shape[1]}  # NRTR: <s> + 5 characters; SAR: the label
        for key in guidance:
            assert outs[key].shape == (2, steps[key], model.guidance_classes), key
        loss = sum(o.float().pow(2).mean() for o in outs.values())
    elif card.task == "ocr/table":
        outs = model(x, torch.zeros(2, 4, dtype=torch.long))
        assert outs["structure_logits"].shape == (2, 4, card.num_classes)
        loss = outs["structure_logits"].pow(2).mean() + outs["loc_preds"].mean()
    else:
        loss = model(x).pow(2).mean()
    loss.backward()
    grads = [p.grad for p in model.backbone.parameters() if p.requires_grad]
    assert grads and any(g is not None and g.abs().sum() > 0 for g in grads)


@pytest.mark.parametrize("name", ["ocr/ppocrv4_det_mobile", "ocr/ppocrv4_rec_mobile"])
def test_reparameterize_folds_with_equal_outputs(name: str):
    torch.manual_seed(0)
    kwargs = {} if "det" in name else {"num_classes": 20}  # the folding is the backbone's; a small head is enough
    model = create_model(name, **kwargs).eval().double()  # float64: the comparison sees the algebra, not rounding
    _randomize_norms(model)
    shape = (1, 3, 64, 64) if "det" in name else (2, 3, 48, 80)
    x = torch.randn(shape, dtype=torch.float64)
    branched_params = sum(p.numel() for p in model.backbone.parameters())
    with torch.no_grad():
        before = model(x)
        model.reparameterize()
        after = model(x)
        model.reparameterize()  # a second call does nothing
        again = model(x)
    folded_params = sum(p.numel() for p in model.backbone.parameters())
    assert folded_params < 0.5 * branched_params, (folded_params, branched_params)
    torch.testing.assert_close(after, before, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(again, after)
    assert not any(".conv_kxk." in k or ".identity." in k for k in model.state_dict())


def test_recognizer_without_targets_in_training_names_the_keys():
    model = create_model("ocr/ppocrv4_rec_mobile", num_classes=20).train()
    with pytest.raises(ValueError, match="needs targets"):
        model(torch.randn(1, 3, 48, 32))
    with pytest.raises(KeyError, match="label_gtc"):
        model(torch.randn(1, 3, 48, 32), {"length": torch.tensor([2])})


def test_num_classes_sizes_the_heads_of_a_custom_dictionary():
    model = create_model("ocr/ppocrv3_rec_mobile", num_classes=40, character_dict="custom")
    assert model.head.ctc_head.fc.out_features == 40 and model.guidance_classes == 41
    assert model.character_dict == "custom"
    with pytest.raises(ValueError, match="num_classes must be 1"):
        create_model("ocr/ppocrv4_det_mobile", num_classes=3)


@pytest.mark.parametrize("name", ["ocr/ppocrv4_rec_mobile", "ocr/ppocrv3_rec_mobile"])
def test_guidance_head_is_for_training_only(name: str, tmp_path):
    # Prediction and export build recognizers without their NRTR / SAR head (PP-OCRv4's is 59 MB of float32);
    # dropping it changes no eval output, a saved copy rebuilds without it, and training keeps it.
    from oarkit.core.engine.checkpoint import contiguous_state, load_model_dir, write_model_dir
    from oarkit.ocr.tasks import TextRecognitionTask

    torch.manual_seed(0)
    guided = create_model(name, num_classes=20).eval()
    lean = create_model(name, num_classes=20, guidance=False).eval()
    assert guided.has_guidance and not lean.has_guidance and lean.guidance_classes == 0
    lean.load_state_dict(guided.state_dict(), strict=False)
    x = torch.randn(2, 3, 48, 64)
    with torch.no_grad():
        expected = guided(x)
        torch.testing.assert_close(lean(x), expected)
        guided.drop_guidance()
        torch.testing.assert_close(guided(x), expected)
    for model in (guided, lean):
        assert not any(k.startswith(("head.before_gtc.", "head.gtc_head.", "head.sar_head.")) for k in
                       model.state_dict())
        assert model.oarkit_kwargs["guidance"] is False
    saved = write_model_dir(tmp_path / "lean", weights=contiguous_state(guided), config_yaml="",
                            meta={"task": "ocr/rec", "model": {"name": name, "kwargs": guided.oarkit_kwargs}})
    rebuilt, _ = load_model_dir(saved)
    assert not rebuilt.has_guidance
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.eval()(x), expected)
    assert lean.train()(x, _targets(lean, 2)).keys() == {"ctc"}  # CTC alone still trains
    task = TextRecognitionTask(name)  # the training task builds the head: its loss needs it
    assert task.model_factory(num_classes=20).has_guidance
    spec = task.deploy_spec(task.model_factory(num_classes=20))  # export drops it (pt2 keeps unused weights)
    assert not spec.module.model.has_guidance


def test_export_preparation_folds_the_branches():
    from oarkit.core.export import reparameterize

    model = create_model("ocr/ppocrv4_rec_mobile", num_classes=20).eval()
    assert reparameterize(model) > 0
    assert not any(".conv_kxk." in k for k in model.state_dict())
    assert model(torch.randn(1, 3, 48, 32)).shape == (1, 4, 20)


def test_cards_name_their_release_and_licence():
    for name in NAMES:
        card = model_info(name)
        assert card.weights is not None and card.weights.url.startswith("https://"), name
        assert card.weights.license == "Apache-2.0", name
        assert card.task in ("ocr/det", "ocr/rec", "ocr/cls", "ocr/table"), name
        assert card.pretrained_loader is not None or card.weights.format == "pdparams", name
