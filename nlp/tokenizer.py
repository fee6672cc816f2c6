"""Tokenizers: loading them from a pretrained directory, keeping them inside run directories, training WordPiece.

Every text task needs a *fast* tokenizer (character offsets map predictions back onto the text). A run directory
must be self-describing, so the tokenizer a model was trained with is serialised into its ``meta.json``
(:func:`tokenizer_spec`) and rebuilt from there by predictors (:func:`tokenizer_from_spec`), wherever the
pretrained directory went. :func:`train_wordpiece` trains a BERT-style WordPiece vocabulary on a text corpus for
models trained from scratch (``tools/train_tokenizer.py``).
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from oarkit.core.errors import ConfigError, DataError

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                  "mask_token": "[MASK]"}
BERT_INPUTS = ("input_ids", "token_type_ids", "attention_mask")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model", "spm.model", "tokenizer_config.json")


def _require_fast(tokenizer: Any, source: str) -> Any:
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"the tokenizer from {source} is not a fast (Rust) tokenizer; oarkit.nlp needs character "
                          "offsets. Give a directory with tokenizer.json, or train one with tools/train_tokenizer.py")
    return tokenizer


def load_tokenizer(source: str | Path) -> Any:
    """A fast tokenizer from a model directory, a ``tokenizer.json`` file, or (online) a hub repository id.

    Args:
        source: a directory holding ``tokenizer.json`` / ``vocab.txt`` (a pretrained model directory, one written by
            :func:`train_wordpiece`), a ``tokenizer.json`` file, or a weights file inside such a directory.

    Raises:
        ConfigError: nothing loadable is there; the message says what was looked for.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    path = Path(source)
    if path.is_file() and path.name != "tokenizer.json":
        path = path.parent  # a weights file: its tokenizer sits beside it
    if path.is_file():
        return PreTrainedTokenizerFast(tokenizer_file=str(path), model_input_names=list(BERT_INPUTS), **SPECIAL_TOKENS)
    if path.is_dir():
        if _paddlenlp_class(path) in PADDLENLP_WORDPIECE:
            return paddlenlp_tokenizer(path)
        if not any((path / name).exists() for name in _TOKENIZER_FILES) and (path / "meta.json").is_file():
            return _tokenizer_of_model_dir(path)  # an oarkit model directory (a run's best/, a converted model)
        if not any((path / name).exists() for name in _TOKENIZER_FILES):
            raise ConfigError(f"{path} holds no tokenizer (looked for {', '.join(_TOKENIZER_FILES)}); pass "
                              "task.tokenizer=DIR, or train one with tools/train_tokenizer.py")
        try:
            return _require_fast(AutoTokenizer.from_pretrained(str(path), local_files_only=True), str(path))
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot load the tokenizer in {path}: {err}") from err
    if "/" in str(source) and not str(source).startswith((".", "/")):
        offline = os.environ.get("HF_HUB_OFFLINE") == "1"
        try:
            return _require_fast(AutoTokenizer.from_pretrained(str(source), local_files_only=offline), str(source))
        except (OSError, ValueError) as err:
            raise ConfigError(f"cannot load the tokenizer of hub repository {source!r}"
                              f"{' (HF_HUB_OFFLINE=1 and it is not cached)' if offline else ''}: {err}. Pass "
                              "task.tokenizer=DIR with a local copy.") from err
    raise ConfigError(f"tokenizer source {str(source)!r} is neither a directory, a tokenizer.json file nor a hub id")


#: PaddleNLP tokenizer classes that are BERT's WordPiece with PaddleNLP's basic tokenization
PADDLENLP_WORDPIECE = ("ErnieTokenizer", "BertTokenizer")


def _paddlenlp_class(path: Path) -> str | None:
    """The ``tokenizer_class`` a PaddleNLP ``tokenizer_config.json`` names (``None``: not a PaddleNLP directory)."""
    import json

    config = path / "tokenizer_config.json"
    if not (path / "vocab.txt").is_file() or not config.is_file() or (path / "tokenizer.json").is_file():
        return None
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        return None
    return str(value) if value else None


def paddlenlp_tokenizer(folder: str | Path, *, max_length: int = 512) -> Any:
    """The fast tokenizer equal to PaddleNLP's ``ErnieTokenizer`` / ``BertTokenizer`` of a model directory
    (``vocab.txt`` and ``tokenizer_config.json``, as ``tokenizer.save_pretrained`` writes them).

    PaddleNLP's BasicTokenizer lower-cases and strips accents when ``do_lower_case``, splits CJK ideographs and
    punctuation, then WordPiece with ``##`` continuations: BERT's normaliser, pre-tokenizer and model.

    Raises:
        ConfigError: the directory holds no ``vocab.txt``.
    """
    import json

    from transformers import BertTokenizerFast
    from transformers.models.bert.tokenization_bert import load_vocab

    folder = Path(folder)
    vocab = folder / "vocab.txt"
    if not vocab.is_file():
        raise ConfigError(f"{folder} holds no vocab.txt, so it carries no PaddleNLP WordPiece tokenizer")
    config = folder / "tokenizer_config.json"
    settings = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
    special = {k: settings.get(k, v) for k, v in SPECIAL_TOKENS.items()}
    return BertTokenizerFast(vocab=load_vocab(str(vocab)), do_lower_case=bool(settings.get("do_lower_case", True)),
                             tokenize_chinese_chars=True, model_max_length=max_length, **special)


def _tokenizer_of_model_dir(path: Path) -> Any:
    """The tokenizer an oarkit model directory's meta.json records."""
    import json

    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read {path / 'meta.json'}: {err}") from err
    return tokenizer_from_spec((meta.get("preprocessing") or {}).get("tokenizer"))


def tokenizer_spec(tokenizer: Any) -> dict[str, Any]:
    """A JSON-friendly description of ``tokenizer`` that :func:`tokenizer_from_spec` rebuilds exactly."""
    _require_fast(tokenizer, type(tokenizer).__name__)
    special = {k: getattr(tokenizer, k) for k in SPECIAL_TOKENS if getattr(tokenizer, k, None) is not None}
    for extra in ("bos_token", "eos_token"):
        if getattr(tokenizer, extra, None) is not None:
            special[extra] = getattr(tokenizer, extra)
    max_length = int(tokenizer.model_max_length) if tokenizer.model_max_length < 1e9 else None
    return {"json": tokenizer.backend_tokenizer.to_str(), "special_tokens": special, "model_max_length": max_length,
            "model_input_names": list(tokenizer.model_input_names),
            "name_or_path": str(getattr(tokenizer, "name_or_path", "")), "vocab_size": len(tokenizer)}


def tokenizer_from_spec(spec: dict[str, Any]) -> Any:
    """The fast tokenizer a :func:`tokenizer_spec` describes."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    if not isinstance(spec, dict) or "json" not in spec:
        raise ConfigError("this model directory's meta.json carries no tokenizer (preprocessing.tokenizer); "
                          "pass tokenizer=DIR to the predictor")
    kwargs: dict[str, Any] = dict(spec.get("special_tokens") or {})
    if spec.get("model_max_length"):
        kwargs["model_max_length"] = int(spec["model_max_length"])
    if spec.get("model_input_names"):
        kwargs["model_input_names"] = list(spec["model_input_names"])
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(spec["json"]), **kwargs)


def _read_lines(files: Sequence[str | Path]) -> Iterator[str]:
    for file in files:
        path = Path(file)
        if not path.is_file():
            raise DataError(f"corpus file {path} does not exist")
        with open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError as err:
                    raise DataError(f"{path}:{number}: not UTF-8 text ({err.reason}); convert the corpus to "
                                    "UTF-8") from err
                if text:
                    yield text


def train_wordpiece(files: Sequence[str | Path], out_dir: str | Path, *, texts: Iterable[str] = (),
                    vocab_size: int = 8000, min_frequency: int = 2, lowercase: bool = True,
                    limit_alphabet: int = 1000, model_max_length: int = 512) -> Path:
    """Train a BERT-style WordPiece tokenizer and save it as a loadable tokenizer directory.

    Args:
        files: text files (one text per line).
        out_dir: where ``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json`` and ``vocab.txt``
            are written.
        texts: more training texts, given directly.
        vocab_size: the vocabulary size, special tokens included.
        min_frequency: the fewest occurrences a merged piece needs.
        lowercase: lower-case and strip accents (an uncased model), as BERT uncased.
        limit_alphabet: the most distinct characters kept as single-character pieces.
        model_max_length: the longest input the tokenizer reports it accepts.

    Returns:
        ``out_dir``.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < len(SPECIAL_TOKENS) + 1:
        raise ConfigError(f"vocab_size={vocab_size} is too small; it must exceed the {len(SPECIAL_TOKENS)} special "
                          "tokens")
    for file in files:
        if not Path(file).is_file():
            raise DataError(f"corpus file {file} does not exist")
    corpus = itertools.chain(_read_lines(files), texts)
    tokenizer = Tokenizer(models.WordPiece(unk_token=SPECIAL_TOKENS["unk_token"]))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=lowercase, lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        limit_alphabet=limit_alphabet, special_tokens=list(SPECIAL_TOKENS.values()),
                                        continuing_subword_prefix="##", show_progress=False)
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    cls, sep = SPECIAL_TOKENS["cls_token"], SPECIAL_TOKENS["sep_token"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.token_to_id(cls)), (sep, tokenizer.token_to_id(sep))])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=model_max_length,
                                   model_input_names=list(BERT_INPUTS), **SPECIAL_TOKENS)
    fast.save_pretrained(str(out))
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    (out / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
    logger.info("trained a WordPiece tokenizer of %d pieces into %s", tokenizer.get_vocab_size(), out)
    return out
