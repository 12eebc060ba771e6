"""`dojoflow grpo` (flows/cli/grpo.py, flows/grpo.py): train and evaluate on a lean-grpo theorem file
as cached Prefect flows on the embedded test server, with rewards from the replay backend on the
sample's traced proofs (no Lean runs), lean-grpo's YAML config, and bad input refused before anything
starts."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.doubles.sample_store import sample_store

runner = CliRunner()

THEOREMS = [  # lean-grpo's format; names of the sample's NatBasics theorems, so replay knows them
    {"name": "one_mul'", "statement": "theorem one_mul' (n : Nat) : 1 * n = n", "context": "", "imports": []},
    {
        "name": "mul_comm'",
        "statement": "theorem mul_comm' (n m : Nat) : n * m = m * n",
        "context": "",
        "imports": ["NatBasics"],
    },
]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    sample_store(home)
    return home


@pytest.fixture()
def theorem_file(tmp_path):
    path = tmp_path / "theorems.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in THEOREMS))
    return path


def test_grpo_algorithms_lists_the_five_with_papers():
    r = invoke("grpo", "algorithms")
    assert r.exit_code == 0
    for name, paper in [
        ("grpo", "2402.03300"),
        ("dr_grpo", "2503.20783"),
        ("dapo", "2503.14476"),
        ("gspo", "2507.18071"),
        ("dgpo", "2305.18290"),
    ]:
        assert name in r.output and paper in r.output


def test_grpo_train_on_a_lean_grpo_file_is_cached_on_rerun_then_evaluate(prefect, home, theorem_file, tmp_path):
    out = tmp_path / "out"
    args = ("grpo", "train", theorem_file, "-a", "drgrpo", "-n", "2", "--max-steps", "1", "-o", out, "--home", home)
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert "done: dr_grpo on 2 theorems, 1 steps" in r.output and "cached" not in r.output
    assert "model: builtin:tiny-causal-lm (the untrained built-in model" in r.output  # said before training
    info = json.loads((out / "dojoflow_model.json").read_text())
    history = json.loads((out / "grpo_history.json").read_text())
    if all(h.get("frac_reward_zero_std") == 1.0 for h in history):  # the untrained model's proofs all fail alike
        assert "warning: nothing was learned: at every step every group's completions got the same reward" in r.output
    else:
        assert "nothing was learned" not in r.output
    assert info["trainer"] == "grpo" and info["settings"]["mode"] == "proof"
    assert info["settings"]["training"]["num_generations"] == 2
    again = invoke(*args)
    assert again.exit_code == 0 and "(cached" in again.output
    shutil.rmtree(out)  # a cached result whose folder is gone is trained again
    third = invoke(*args)
    assert third.exit_code == 0 and "done: dr_grpo" in third.output and "(cached" not in third.output, third.output
    assert (out / "dojoflow_model.json").is_file()

    ev = invoke("grpo", "evaluate", out, theorem_file, "-k", "2", "--max-new-tokens", "8", "--home", home)
    assert ev.exit_code == 0, ev.output
    assert "2 theorems, checked by replay: pass@1" in ev.output and "pass@2" in ev.output
    assert re.search(r"pass@1 [0-9.]+ \[[0-9.]+, [0-9.]+\], pass@2 [0-9.]+ \[[0-9.]+, [0-9.]+\]", ev.output), ev.output
    figures = r"pass@1 [0-9.]+ \[[0-9.]+, [0-9.]+\], pass@2 [0-9.]+ \[[0-9.]+, [0-9.]+\]"
    assert re.search(r"^baseline \(the closing tactics, same backend and k\): " + figures, ev.output, re.M), ev.output
    assert (
        "(cached)"
        in invoke("grpo", "evaluate", out, theorem_file, "-k", "2", "--max-new-tokens", "8", "--home", home).output
    )


def test_grpo_train_reads_a_lean_grpo_yaml_config(prefect, home, theorem_file, tmp_path):
    config = tmp_path / "config_dgpo.yaml"
    config.write_text(
        "algorithm: DGPO\nalgorithm_config: {use_dpo_loss: true, dpo_coef: 0.5}\nnum_generations: 2\n"
        "max_completion_length: 8\nreward_type: strict\nlearning_rate: 5e-6\n"
        f"output_dir: {tmp_path / 'from-config'}\n"
    )
    r = invoke("grpo", "train", theorem_file, "--config", config, "--max-steps", "1", "--home", home)
    assert r.exit_code == 0, r.output
    info = json.loads((tmp_path / "from-config" / "dojoflow_model.json").read_text())
    s = info["settings"]
    assert s["algorithm"] == "dgpo" and s["reward_preset"] == "strict" and s["algorithm_config"]["dpo_coef"] == 0.5
    assert s["training"]["learning_rate"] == 5e-6 and s["training"]["max_completion_length"] == 8


@pytest.mark.parametrize(
    "extra, message",
    [
        (["-a", "ppo"], "unknown algorithm 'ppo'"),
        (["--algo-config", '{"consensus_weight": 0.3}'], "'consensus_weight' is not an option of algorithm 'grpo'"),
        (["--algo-config", "{nope"], "--algo-config: is not valid JSON"),
        (["-n", "1"], "num_generations"),
        (["-n", "3", "-b", "4"], "does not divide the generation batch"),
        (["-r", "generous"], "reward_preset"),
        (["--backend", "repl"], "lake"),
        (["--lr", "nan"], "learning_rate: nan is not a finite number"),  # was reported as `learning_rate: None`
    ],
)
def test_bad_options_fail_before_anything_starts(home, theorem_file, tmp_path, extra, message):
    out = tmp_path / "out"
    r = invoke("grpo", "train", theorem_file, *extra, "-o", out, "--home", home)
    assert r.exit_code == 2 and message in r.output.replace("\n", " "), r.output
    assert ".." not in r.output, r.output  # one full stop between the problem and the fix
    assert not out.exists()


def test_bad_files_fail_with_the_line_or_key(home, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(THEOREMS[0]) + '\n{"name": "x"}\n')
    r = invoke("grpo", "train", bad, "--home", home)
    assert r.exit_code == 2 and "line 2" in r.output and "statement" in r.output
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(THEOREMS[0]) + "\n")
    config = tmp_path / "c.yaml"
    config.write_text("algorithm: gspo\nuse_consensus: true\n")
    r = invoke("grpo", "train", good, "--config", config, "--home", home)
    assert r.exit_code == 2 and "'use_consensus' is not a lean-grpo config key" in r.output.replace("\n", " ")
    config.write_text("use_vllm: true\n")
    r = invoke("grpo", "train", good, "--config", config, "--home", home)
    assert r.exit_code == 2 and "use_vllm" in r.output and "vllm" in r.output.replace("\n", " ")
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps({"name": "my_lemma", "statement": "theorem my_lemma : 1 = 1"}) + "\n")
    r = invoke("grpo", "train", unknown, "--home", home)
    assert r.exit_code == 2 and "my_lemma: not in the store" in r.output.replace("\n", " ")
    r = invoke("grpo", "evaluate", tmp_path / "no-checkpoint", good, "--home", home)
    assert r.exit_code == 2 and "is not a folder" in r.output


def tree_digest(root) -> dict:
    """Every file under `root` but locks and Prefect's own home (other tests' runs write there)."""
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and not p.name.endswith("lock")]
    return {str(p.relative_to(root)): p.read_bytes() for p in files if "prefect" not in p.relative_to(root).parts}


@pytest.mark.parametrize(
    "target, message",
    [
        ("HOME/store/data", "holds or is inside the Dojoflow store"),
        ("HOME/store", "holds or is inside the Dojoflow store"),
        ("HOME", "holds or is inside the Dojoflow store"),
        ("HOME/checkpoints/sft/sft-1", "holds or is inside the Dojoflow checkpoints"),
        ("SFT", "is a Dojoflow checkpoint, which training would replace"),
        ("FULL", "is a folder holding other files, which training would replace"),
        ("FILE", "is a file, not a folder"),
        ("FILE/sub", "which is a file"),
    ],
)
def test_grpo_train_refuses_an_output_it_would_destroy(home, theorem_file, tmp_path, target, message):
    """Training replaces -o whole: pointed at the store it exited 0 with the store damaged,
    at an SFT checkpoint it replaced it and its manifest. Refused before anything starts."""
    sft = tmp_path / "sft-checkpoint"
    sft.mkdir()
    (sft / "dojoflow-checkpoint.json").write_text(json.dumps({"checkpoint": {"trainer": "sft"}}))
    (sft / "dojoflow_model.json").write_text(json.dumps({"kind": "full", "trainer": "sft"}))
    full = tmp_path / "notes"
    full.mkdir()
    (full / "todo.txt").write_text("mine")
    (tmp_path / "file").write_text("x")
    where = {"HOME": str(home), "SFT": str(sft), "FULL": str(full), "FILE": str(tmp_path / "file")}
    head, _, rest = target.partition("/")
    out = where[head] + (f"/{rest}" if rest else "")
    before = {name: tree_digest(p) for name, p in (("home", home), ("tmp", tmp_path))}
    r = invoke("grpo", "train", theorem_file, "-n", "2", "--max-steps", "1", "-o", out, "--home", home)
    assert r.exit_code == 2 and r.output.startswith("error: -o "), r.output
    assert message in r.output.replace("\n", " ") and "previous `dojoflow grpo train`" in r.output.replace("\n", " ")
    assert {name: tree_digest(p) for name, p in (("home", home), ("tmp", tmp_path))} == before


@pytest.mark.parametrize(
    "command, message",
    [
        (["train", "THEOREMS", "-m", "NOMODEL"], "--model: the model path"),
        (["train", "THEOREMS", "--backend", '{"kind": "kimina", "kimina": {"url": "http://127.0.0.1:9"}}'], "kimina"),
        (["evaluate", "EMPTY", "THEOREMS"], "holds no config.json: it is not a model folder"),
    ],
)
def test_errors_found_inside_the_flow_before_are_one_line_before_it(home, theorem_file, tmp_path, command, message):
    """These printed Prefect's log and two tracebacks after a flow started (40-60 s); now
    they are found before Prefect is started."""
    (tmp_path / "empty").mkdir()
    where = {"THEOREMS": theorem_file, "NOMODEL": tmp_path / "no-model", "EMPTY": tmp_path / "empty"}
    out = ["-o", tmp_path / "out"] if command[0] == "train" else []
    r = invoke("grpo", *[where.get(a, a) for a in command], *out, "--home", home)
    assert r.exit_code == 2 and r.output.startswith("error: ") and message in r.output, r.output
    assert "Traceback" not in r.output and "Flow run" not in r.output and "Task run" not in r.output, r.output
    assert not (tmp_path / "out").exists()
