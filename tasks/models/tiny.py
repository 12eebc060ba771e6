"""Tiny models built locally, so the default run and the tests need no network.

Two builders, each writing a `save_pretrained` folder (config, weights, tokenizer):

- `build_tiny_causal_lm(out_dir, seed)`: a 2-layer Qwen2 causal LM (hidden 64,
  4 heads) for the tactic generators (SFT, GRPO), with a chat template
  (system/user/assistant), `<|im_end|>` as eos and `<|pad|>` as pad.
- `build_tiny_encoder(out_dir, seed)`: a 2-layer BERT (hidden 64, 4 heads) for the
  retriever and the progress model, with `[CLS] a [SEP] b [SEP]` inputs.

Both tokenizers are byte-level BPE trained in a few milliseconds on the Lean text in
`lean_corpus.py`: every byte has a token, so no input is ever unknown. Training is
deterministic, and weights are drawn from a seeded generator, so the same seed gives
the same files byte for byte. Builds are idempotent (a finished folder is returned
as is) and atomic (built under a temporary name, then renamed into place), so two
processes that build the same model at once both end up with one whole folder.

Load these tokenizers with `tasks.models.loading.load_tokenizer` (it uses
`PreTrainedTokenizerFast`: `AutoTokenizer` on a `qwen2` folder would substitute a
Qwen2 tokenizer with another pre-tokenizer, and the ids would change).

    python -m tasks.models.tiny /tmp/tiny-lm          # build the causal LM there
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from storage import atomic
from storage.errors import InputError

# Bump when the corpus, the configs or the build steps change: resolved builtin
# folders carry it in their name, so an old build is never mistaken for a new one.
BUILDER_VERSION = 1
MARKER = "dojoflow_builtin.json"

CAUSAL_LM = "tiny-causal-lm"
ENCODER = "tiny-encoder"

# Causal LM special tokens. `<|im_end|>` ends every turn and is the eos token, so
# generation stops at the end of the assistant's turn.
IM_START, IM_END, PAD, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|pad|>", "<|endoftext|>"
# The `{% generation %}` markers let TRL's `assistant_only_loss` find the assistant
# tokens; they render to nothing otherwise. A prompt rendered with
# `add_generation_prompt=True` is a prefix of the prompt+completion rendering, which
# completion-only loss relies on.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- generation -%}{{ message['content'] + '<|im_end|>' }}{%- endgeneration -%}"
    "{{ '\\n' }}"
    "{%- else -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

ENCODER_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

TINY_DIMS = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}


def _train_byte_bpe(special_tokens: tuple[str, ...], vocab_size: int):
    """A byte-level BPE `tokenizers.Tokenizer` trained on the built-in Lean corpus."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from .lean_corpus import corpus_lines

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_lines(), trainer=trainer)
    return tok


def causal_lm_tokenizer():
    """The tiny causal LM's tokenizer (a `PreTrainedTokenizerFast`), built in memory."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    tok = _train_byte_bpe((ENDOFTEXT, IM_START, IM_END, PAD), vocab_size=1024)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD,
        bos_token=None,
        unk_token=None,
        model_max_length=2048,
        padding_side="right",
        chat_template=CHAT_TEMPLATE,
    )


def encoder_tokenizer():
    """The tiny encoder's tokenizer: byte-level BPE with BERT's `[CLS] a [SEP] b [SEP]`."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    tok = _train_byte_bpe(ENCODER_SPECIALS, vocab_size=1024)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
        padding_side="right",
    )


def _seeded(seed: int, make: Callable):
    """Call `make()` with torch's global generator seeded, restoring it afterwards."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def _write_causal_lm(tmp: Path, seed: int) -> None:
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    tokenizer = causal_lm_tokenizer()
    eos_id, pad_id = tokenizer.convert_tokens_to_ids([IM_END, PAD])
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        max_position_embeddings=2048,
        num_key_value_heads=TINY_DIMS["num_attention_heads"],
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        use_sliding_window=False,
        dtype="float32",
        **TINY_DIMS,
    )
    model = _seeded(seed, lambda: Qwen2ForCausalLM(config).to(torch.float32))
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=None)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)


def _write_encoder(tmp: Path, seed: int) -> None:
    import torch
    from transformers import BertConfig, BertModel

    tokenizer = encoder_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        dtype="float32",
        **TINY_DIMS,
    )
    model = _seeded(seed, lambda: BertModel(config).to(torch.float32))
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)


def _marker(name: str, seed: int) -> dict:
    return {"builtin": name, "seed": seed, "builder_version": BUILDER_VERSION}


def _read_marker(path: Path) -> dict | None:
    try:
        return json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None


def _build(out_dir: Path, name: str, seed: int, write: Callable[[Path, int], None]) -> Path:
    out_dir = Path(out_dir)
    want = _marker(name, seed)
    found = _read_marker(out_dir)
    if found == want:
        return out_dir
    if out_dir.exists() and found is None and any(out_dir.iterdir()):
        raise InputError(
            out_dir,
            f"exists and is not a folder built by Dojoflow (no {MARKER}), so the {name} model is not built there",
            "Choose an empty or missing folder.",
        )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = atomic.temp_sibling(out_dir)
    try:
        tmp.mkdir()
        write(tmp, seed)
        atomic.write_json(tmp / MARKER, want)
        if found is not None:
            # An older build of ours (other seed or builder version): replace it whole.
            with atomic.atomic_path(out_dir) as staged:
                os.replace(tmp, staged)
        else:
            try:
                os.rename(tmp, out_dir)
            except OSError:
                # Another process renamed its own build into place first: keep that one.
                if _read_marker(out_dir) != want:
                    raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def build_tiny_causal_lm(out_dir: str | os.PathLike, seed: int = 0) -> Path:
    """Build (once) the tiny Qwen2 causal LM and its tokenizer into `out_dir`; return it."""
    return _build(Path(out_dir), CAUSAL_LM, seed, _write_causal_lm)


def build_tiny_encoder(out_dir: str | os.PathLike, seed: int = 0) -> Path:
    """Build (once) the tiny BERT encoder and its tokenizer into `out_dir`; return it."""
    return _build(Path(out_dir), ENCODER, seed, _write_encoder)


BUILDERS: dict[str, Callable[..., Path]] = {CAUSAL_LM: build_tiny_causal_lm, ENCODER: build_tiny_encoder}


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tiny-causal-lm")
    print(build_tiny_causal_lm(target))
