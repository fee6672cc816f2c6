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

.PHONY: install demo test test-slow lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip setuptools wheel
	$(PY) -m pip install torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -e ".[dev,demo]"
	touch $(STAMP)

demo: $(STAMP)
	@start=$$(date +%s); \
	$(PY) tools/prepare_data.py digits --out $(DEMO_DATA) && \
	$(PY) tools/train.py -c configs/clas/pp_lcnet_x0_5_digits_32x32.yaml data.root=$(DEMO_DATA) output_dir=$(DEMO_RUN) && \
	$(PY) tools/eval.py $(DEMO_RUN) --data $(DEMO_DATA) && \
	$(PY) tools/predict.py $(DEMO_RUN) $$(for d in 0 3 7; do ls $(DEMO_DATA)/val/$$d/*.png | head -n 1; done) \
		--topk 3 --save-dir $(DEMO_RUN)/predictions && \
	$(PY) tools/summary.py $(DEMO_RUN) --started $$start

lint: $(STAMP)
	$(VENV)/bin/ruff check core clas seg det ocr nlp configs tools tests bench

test: lint
	$(PY) -m pytest -q

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) runs data .cache
