"""lean-grpo compatibility (tasks/grpo/theorem_files.py): theorem file formats, bad lines named by
number, YAML keys mapped onto GRPOSettings, unknown keys refused, theorems matched to the store."""

from __future__ import annotations

import json

import pytest

from storage.errors import InputError
from tasks.grpo.config import GRPOSettings
from tasks.grpo.theorem_files import (
    FILE_REPO_ID,
    checkable_specs,
    merge_fields,
    read_lean_grpo_config,
    read_theorem_file,
    settings_from_lean_grpo,
    theorem_specs,
)
from tests.doubles.sample_store import sample_store

ADD_ZERO = {
    "name": "add_zero",
    "statement": "theorem add_zero (n : Nat) : n + 0 = n",
    "context": "",
    "imports": ["Mathlib"],
}
ADD_COMM = {"name": "add_comm", "statement": "theorem add_comm (n m : Nat) : n + m = m + n"}


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(json.dumps(t) for t in (ADD_ZERO, ADD_COMM)) + "\n",  # JSONL, lean-grpo's README example
        json.dumps([ADD_ZERO, ADD_COMM]),  # a JSON list
        json.dumps({"theorems": [ADD_ZERO, ADD_COMM]}),  # {"theorems": [...]}
    ],
)
def test_the_three_theorem_file_formats(tmp_path, text):
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    theorems = read_theorem_file(path)
    assert [t.name for t in theorems] == ["add_zero", "add_comm"]
    assert theorems[0].imports == ("Mathlib",) and theorems[1].context == ""


@pytest.mark.parametrize(
    "lines, where, problem",
    [
        ([ADD_ZERO, "{not json"], "line 2", "line 2 is not valid JSON"),
        ([ADD_ZERO, {"name": "x"}], "line 2", "`statement` is missing"),
        ([ADD_ZERO, {**ADD_COMM, "proof": "simp"}], "line 2", "unknown keys proof"),
        ([ADD_ZERO, {**ADD_COMM, "imports": "Mathlib"}], "line 2", "`imports` must be a list"),
        ([ADD_ZERO, ADD_ZERO], None, "theorem names appear twice: add_zero"),
    ],
)
def test_a_bad_line_is_named_by_its_number(tmp_path, lines, where, problem):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    with pytest.raises(InputError) as e:
        read_theorem_file(path)
    assert problem in e.value.problem and e.value.where == where and str(path) in str(e.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_theorem_file(tmp_path / "none.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="holds no theorems"):
        read_theorem_file(tmp_path / "empty.jsonl")


def test_lean_grpo_yaml_keys_map_onto_settings(tmp_path):
    path = tmp_path / "config_dapo.yaml"
    path.write_text("""
base_model: builtin:tiny-causal-lm
algorithm: dapo
algorithm_config: {population_size: 100, positive_advantage_scale: 1.0, negative_advantage_scale: 0.8}
num_generations: 4
learning_rate: 5e-6
max_completion_length: 64
beta: 0.0
temperature: 0.9
reward_type: shaped
lora_rank: 8
lora_alpha: 16
warmup_ratio: 0.1
output_dir: out/dapo
""")
    fields, cli = read_lean_grpo_config(path)
    s = GRPOSettings.model_validate(merge_fields({"mode": "proof"}, fields))
    assert s.algorithm == "dapo" and s.reward_preset == "shaped" and s.reward.error_penalty == -0.05
    assert s.algorithm_config["negative_advantage_scale"] == 0.8 and s.algorithm_config["beta"] == 0.0
    assert s.training["num_generations"] == 4 and s.training["temperature"] == 0.9
    assert s.training["warmup_steps"] == 0.1 and s.lora.r == 8 and s.lora.alpha == 16
    assert cli == {"output": "out/dapo"}


def test_unknown_yaml_key_is_an_error_not_ignored():
    with pytest.raises(InputError, match="'consensus' is not a lean-grpo config key"):
        settings_from_lean_grpo({"algorithm": "gspo", "consensus": True})


def test_inference_url_selects_trls_vllm_server_mode():
    fields, _ = settings_from_lean_grpo({"inference_url": "http://gpu:8000"})
    assert fields["training"] == {"vllm_server_base_url": "http://gpu:8000", "vllm_mode": "server"}


def test_merge_fields_merges_sections_later_wins():
    merged = merge_fields({"training": {"a": 1, "b": 1}, "x": 1}, {"training": {"b": 2}, "x": 2})
    assert merged == {"training": {"a": 1, "b": 2}, "x": 2}


def test_theorems_are_matched_to_the_store_and_replay_refuses_the_rest(tmp_path):
    from tasks.grpo.theorem_files import FileTheorem

    store = sample_store(tmp_path / "home")
    file = [
        FileTheorem("one_mul'", "theorem one_mul' (n : Nat) : 1 * n = n"),
        FileTheorem("my_lemma", "theorem my_lemma : 1 = 1"),
    ]
    specs = theorem_specs(file, store)
    assert specs[0].full_name == "NatBasics.one_mul'" and specs[0].repo_id != FILE_REPO_ID
    assert specs[1].repo_id == FILE_REPO_ID and specs[1].statement == "theorem my_lemma : 1 = 1"
    with pytest.raises(InputError, match="my_lemma: not in the store"):
        checkable_specs(GRPOSettings(mode="proof"), file, store)
    assert len(checkable_specs(GRPOSettings(mode="proof"), file[:1], store)) == 1


def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(ADD_ZERO).encode() + b'\n{"name": "x\xff", "statement": "s"}\n')
    with pytest.raises(InputError) as e:
        read_theorem_file(path)
    assert "is not UTF-8 text (byte 0xff on line 2)" in str(e.value) and e.value.where == "line 2"


@pytest.mark.parametrize("name", ["add\nzero", "add\x00zero", "add\tzero", "add\x7fzero"])
def test_theorem_names_with_a_control_character_are_refused(tmp_path, name):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**ADD_ZERO, "name": name}) + "\n")  # JSON escapes keep it on one line
    with pytest.raises(InputError) as e:
        read_theorem_file(path)
    assert "holds the control character" in e.value.problem and e.value.where == "line 1"


def test_a_statement_with_a_nul_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**ADD_ZERO, "statement": "theorem x : 1 = 1\x00"}) + "\n")
    with pytest.raises(InputError, match="`statement` holds a NUL"):
        read_theorem_file(path)


def test_a_folder_is_not_a_theorem_file(tmp_path):
    with pytest.raises(InputError, match="is not a regular file"):
        read_theorem_file(tmp_path)


@pytest.mark.timeout(600)  # a hang guard only: the check is linear (it was quadratic: hours at 300k lines)
def test_a_300k_line_theorem_file_is_read_and_its_duplicates_named(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({"name": f"t{i}", "statement": f"theorem t{i} : {i} = {i}"}) for i in range(300_000)]
    path.write_text("\n".join(lines) + "\n")
    assert len(read_theorem_file(path)) == 300_000
    path.write_text("\n".join(lines + lines[:12]) + "\n")
    with pytest.raises(InputError, match="theorem names appear twice: t0, t1, t10, t11, t2,.* and 2 more"):
        read_theorem_file(path)


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "lean-grpo.yaml"
    path.write_text("algorithm: dapo\nnum_generations: 4\nalgorithm_config: {beta: 0.1\nlearning_rate: 1e-5\n")
    with pytest.raises(InputError) as e:
        read_lean_grpo_config(path)
    assert str(e.value).startswith(f"{path}, line 4, column ") and "is not valid YAML" in str(e.value)
    assert "<unicode string>" not in str(e.value) and "\n" not in str(e.value)
    path.write_bytes(b"algorithm: dapo\xff\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        read_lean_grpo_config(path)


def test_a_repository_at_a_lean_version_the_backend_cannot_run_stops_the_run(tmp_path, monkeypatch):
    """Mismatch #4 for GRPO: the leandojo backend's Dojo cannot run tactics on Lean >= v4.12
    (LeanDojo#211); the sample is at v4.20.0, refused before training with the range and the fix."""
    import os

    from tasks.grpo.theorem_files import FileTheorem
    from tests.doubles.dojo_lean import make_dojo_lean

    store = sample_store(tmp_path / "home")
    dojo = make_dojo_lean(tmp_path / "dojo", repos=("NatBasics",))
    monkeypatch.setenv("PATH", f"{dojo.bin_dir}{os.pathsep}{os.environ['PATH']}")
    settings = GRPOSettings(mode="proof", backend={"kind": "leandojo", "leandojo": {"cache_dir": str(dojo.cache_dir)}})
    file = [FileTheorem("one_mul'", "theorem one_mul' (n : Nat) : 1 * n = n")]
    with pytest.raises(InputError, match=r"uses Lean v4\.20\.0; the leandojo backend .* v4\.9\.0 to v4\.11\.x"):
        checkable_specs(settings, file, store)
    assert not dojo.events()


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_a_100k_deep_json_theorem_file_is_one_line_not_a_recursion_error(tmp_path, text):
    """Python's json raised RecursionError: a traceback (issue 26)."""
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(InputError, match="nested too deeply to read"):
        read_theorem_file(path)


def test_an_error_naming_300k_theorems_names_a_few_and_the_count(tmp_path):
    """One 4 MB line once (issue 26)."""
    from tasks.grpo.theorem_files import FileTheorem

    store = sample_store(tmp_path / "home")
    file = [FileTheorem(f"lemma_{i}", f"theorem lemma_{i} : {i} = {i}") for i in range(300_000)]
    with pytest.raises(InputError) as e:
        checkable_specs(GRPOSettings(mode="proof"), file, store)
    message = str(e.value)
    assert message.startswith("lemma_0, lemma_1, lemma_2, lemma_3, lemma_4 and 299995 more (300000 in all): not in")
    assert len(message) < 1000


def test_a_name_holding_a_newline_is_quoted_and_the_error_stays_one_line():
    from storage.errors import InputError as Error

    message = str(Error("alpha\nbeta", "no such repository in the store", "run `dojoflow repos`"))
    assert message == "'alpha\\nbeta': no such repository in the store. run `dojoflow repos`"
