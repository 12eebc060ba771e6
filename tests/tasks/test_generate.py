"""Tactic generators: a local checkpoint (the tiny causal LM), refusal of checkpoints that
are not generators, an OpenAI-compatible endpoint double on 127.0.0.1 (good answers,
retries, garbage), and progress re-ranking.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_generate.py -q
"""

from __future__ import annotations

import json

import pytest

from tasks.generate import (
    EndpointError,
    EndpointSettings,
    GeneratorSettings,
    NotAGeneratorError,
    TacticQuery,
    open_generator,
)
from tasks.generate.rerank import ProgressReranked
from tasks.models.loading import resolve_model
from tests.doubles.openai_endpoint import EndpointDouble


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


def test_checkpoint_generator_ranks_distinct_tactics_for_a_batch_of_states(models):
    folder = resolve_model("builtin:tiny-causal-lm", models)
    gen = open_generator(GeneratorSettings(max_new_tokens=8, batch_size=2), folder, model_cache_dir=models)
    states = ["n : Nat\n⊢ n + 0 = n", "⊢ True", "p q : Prop\n⊢ p ∧ q → q"]
    out = gen.generate([TacticQuery(s) for s in states], 3)
    assert len(out) == 3
    for candidates in out:
        assert 1 <= len(candidates) <= 3
        assert all(lp <= 0 for _, lp in candidates)
        assert [lp for _, lp in candidates] == sorted((lp for _, lp in candidates), reverse=True)
        assert len({" ".join(t.split()) for t, _ in candidates}) == len(candidates)
        assert all("\n" not in t for t, _ in candidates)  # tactics are one line
    # the ledger's tokens generated (tasks/ledger.py): counted, never more than asked for
    from tasks.compute import tokens_generated

    assert 0 < tokens_generated(gen) <= 3 * 3 * 8
    assert tokens_generated(ProgressReranked(inner=gen, scorer=None)) == tokens_generated(gen)  # through a wrapper


def test_a_retriever_checkpoint_is_not_a_tactic_generator(tmp_path):
    folder = tmp_path / "retriever-step1"
    folder.mkdir()
    (folder / "dojoflow-checkpoint.json").write_text(
        json.dumps({"checkpoint": {"trainer": "retriever", "has_model": True}})
    )
    with pytest.raises(NotAGeneratorError, match="`retriever` checkpoint, not a tactic generator"):
        open_generator(GeneratorSettings(), folder)


def test_an_encoder_folder_is_not_a_tactic_generator(models):
    encoder = resolve_model("builtin:tiny-encoder", models)
    with pytest.raises(NotAGeneratorError, match="not a causal language model"):
        open_generator(GeneratorSettings(), encoder)


def test_a_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(NotAGeneratorError, match="does not exist"):
        open_generator(GeneratorSettings(), tmp_path / "nowhere")


def _endpoint(url: str, **kw) -> GeneratorSettings:
    return GeneratorSettings(kind="endpoint", endpoint=EndpointSettings(url=url, model="double", **kw))


def test_endpoint_generator_against_openai_double(monkeypatch):
    monkeypatch.setenv("DOJOFLOW_TEST_KEY", "sk-secret-123")
    table = {
        "n + 0 = n": [("simp", [-0.1, -0.2]), ("omega", [-0.5]), ("simp", [-3.0])],
        "⊢ True": [("trivial", [-0.01, None])],
    }
    with EndpointDouble(table) as double:
        gen = open_generator(_endpoint(double.url, api_key_env="DOJOFLOW_TEST_KEY"))
        before = gen.tokens[0]  # opening it sent a probe request
        out = gen.generate([TacticQuery("n : Nat\n⊢ n + 0 = n"), TacticQuery("⊢ True")], 3)
        gen.close()
    assert out[0] == [("simp", pytest.approx(-0.3)), ("omega", pytest.approx(-0.5))]  # summed, deduplicated, ranked
    assert out[1] == [("trivial", pytest.approx(-0.01))]
    # the ledger's tokens: one log-probability per token the server generated (simp 2, omega 1, simp 1; trivial 2 × 3)
    assert gen.tokens[0] - before == 10
    last = double.requests[-1]
    assert last["path"] == "/v1/completions" and last["body"]["n"] == 3 and last["body"]["logprobs"] == 1
    assert len(last["body"]["prompt"]) == 2  # one request for the batch
    assert last["auth"] == "Bearer sk-secret-123"


def test_endpoint_retries_a_busy_server(monkeypatch):
    with EndpointDouble({"⊢ True": [("trivial", [-0.1])]}) as double:
        double.fail_next = 2
        gen = open_generator(_endpoint(double.url, retries=3, api_key_env=None))
        assert gen.generate([TacticQuery("⊢ True")], 1) == [[("trivial", pytest.approx(-0.1))]]
        double.fail_next = 10
        with pytest.raises(EndpointError) as e:
            gen.generate([TacticQuery("⊢ True")], 1)
        gen.close()
    assert e.value.transient and "HTTP 503" in str(e.value)


@pytest.mark.parametrize("mode, problem", [("garbage", "not an OpenAI completions response"), ("not-json", "not JSON")])
def test_endpoint_answering_garbage_fails_before_any_search(monkeypatch, mode, problem):
    monkeypatch.setenv("DOJOFLOW_TEST_KEY", "sk-secret-123")
    with EndpointDouble({}) as double:
        double.mode = mode
        with pytest.raises(EndpointError) as e:
            open_generator(_endpoint(double.url, api_key_env="DOJOFLOW_TEST_KEY"))
    assert problem in str(e.value) and double.url in str(e.value)
    assert "sk-secret-123" not in str(e.value)
    assert len(double.requests) == 1  # the probe, and nothing more


class FewestStepsScorer:
    """A progress scorer of our own interface: steps remaining = length of the tactic."""

    def score(self, goal, prefix, candidates):
        return [float(len(c)) for c in candidates]


def test_progress_reranking_tries_fewest_predicted_steps_first():
    class Inner:
        name = "inner"

        def generate(self, queries, k):
            return [[("simp only [foo, bar]", -0.1), ("rfl", -0.9), ("omega", -0.5)] for _ in queries]

    out = ProgressReranked(Inner(), FewestStepsScorer()).generate([TacticQuery("⊢ x")], 3)
    assert out == [[("rfl", -0.9), ("omega", -0.5), ("simp only [foo, bar]", -0.1)]]  # log-probs kept


def test_endpoint_loads_the_round_adapter_or_says_plainly_that_it_cannot(tmp_path):
    """vLLM's run-time adapter loading (the double follows vllm/entrypoints/openai/serving_models.py):
    an adapter checkpoint is loaded once and then asked for by name; a full model, or a server without
    the route, leaves the server's own model answering, and the generator says so."""
    adapter = tmp_path / "ckpt-a"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"task_type": "CAUSAL_LM", "base_model_name_or_path": "m"}')
    full = tmp_path / "ckpt-full"
    full.mkdir()
    with EndpointDouble({"⊢ True": [("trivial", [-0.1])]}) as double:
        double.base_model = "double"
        gen = open_generator(_endpoint(double.url, api_key_env=None), checkpoint=adapter)
        assert gen.adapter_status[0] == f"adapter dojoflow-ckpt-a loaded into {double.url} and asked for by name"
        assert double.adapters == {"dojoflow-ckpt-a": str(adapter.resolve())}
        gen.generate([TacticQuery("⊢ True")], 1)
        assert double.requests[-1]["body"]["model"] == "dojoflow-ckpt-a"
        again = open_generator(_endpoint(double.url, api_key_env=None), checkpoint=adapter)  # a rerun of the round
        assert "loaded into" in again.adapter_status[0] and len(double.adapters) == 1
        plain = open_generator(_endpoint(double.url, api_key_env=None), checkpoint=full)
        assert plain.adapter_status[0].startswith("cannot load ckpt-full: it is a full model")
        plain.generate([TacticQuery("⊢ True")], 1)
        assert double.requests[-1]["body"]["model"] == "double"
        double.lora_updating = False
        other = tmp_path / "ckpt-b"
        other.mkdir()
        (other / "adapter_config.json").write_text((adapter / "adapter_config.json").read_text())
        refused = open_generator(_endpoint(double.url, api_key_env=None), checkpoint=other)
        assert "cannot load adapter dojoflow-ckpt-b: the server has no adapter loading" in refused.adapter_status[0]
        assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True" in refused.adapter_status[0]
        refused.generate([TacticQuery("⊢ True")], 1)
        assert double.requests[-1]["body"]["model"] == "double"
