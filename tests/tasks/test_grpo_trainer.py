"""LeanGRPOTrainer (tasks/grpo/lean_trainer.py) on the tiny model, through TRL's real hooks:
TRL's loss under each algorithm's settings equals the paper's objective written out by hand
(`algorithms.clipped_objective`); DAPO's dynamic sampling drops zero-variance groups and refills
the batch; DGPO = GRPO + the DPO term, and = GRPO at dpo_coef 0; advantage options replace TRL's.
Rewards here are small deterministic functions of the prompt and the completion's position, so
group variance is known; Lean-decided rewards are in test_grpo_train.py.
"""

from __future__ import annotations

import pytest
import torch

from tasks.grpo.algorithms import clipped_objective, dpo_loss, dpo_pairs, rank_advantages, sequence_logps
from tasks.grpo.config import GRPOSettings, build_grpo_config
from tasks.models import TINY_CAUSAL_LM, load_causal_lm, resolve_model

G = 4


def alternating(prompts, completions, **kwargs):
    """'vary' prompts: 0, 1, 0, 1 over a group (variance); 'flat' prompts: 0 for all (none)."""
    return [float(i % 2) if "vary" in str(p) else 0.0 for i, p in enumerate(prompts)]


def lean_tactic(prompts, completions, **kwargs):
    """A stand-in for the Lean reward: the first completion of each group is 'verified' (1.0)."""
    return [1.0 if i % G == 0 else -0.1 for i in range(len(prompts))]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return resolve_model(TINY_CAUSAL_LM, tmp_path_factory.mktemp("models"))


def rows(kinds):
    return [{"prompt": [{"role": "user", "content": f"{k} goal {i}: ⊢ n + 0 = n"}]} for i, k in enumerate(kinds)]


def make_trainer(base, tmp_path, algorithm, config=None, funcs=(alternating,), data=None, verified=None, **training):
    import datasets

    from tasks.grpo.lean_trainer import LeanGRPOTrainer

    model, tok = load_causal_lm(base)
    settings = GRPOSettings(
        algorithm=algorithm,
        algorithm_config=config or {},
        rewards={},
        training={
            "num_generations": G,
            "per_device_train_batch_size": 2 * G,
            "max_completion_length": 8,
            "seed": 0,
            **training,
        },
    )
    args = build_grpo_config(settings, tmp_path / "out")
    args.reward_weights = [1.0] * len(funcs)
    return LeanGRPOTrainer(
        model=model,
        reward_funcs=list(funcs),
        args=args,
        train_dataset=datasets.Dataset.from_list(data or rows(["vary", "flat", "vary", "flat"])),
        processing_class=tok,
        algorithm=settings.resolved_algorithm(),
        verified_reward=verified,
    )


def batch(trainer, kinds):
    inputs = [r for r in rows(kinds) for _ in range(G)]
    return trainer._generate_and_score_completions(inputs)


def hand_inputs(trainer, out):
    """The generated batch with hand-made completion lengths (row i keeps i % T + 1 tokens),
    advantages and old log-probs (a sin-shaped perturbation)."""
    n, t = out["completion_ids"].shape
    lengths = torch.arange(n) % t + 1
    out = dict(out)
    out["completion_mask"] = (torch.arange(t).unsqueeze(0) < lengths.unsqueeze(1)).to(out["completion_mask"].dtype)
    out["num_items_in_batch"] = out["completion_mask"].sum()
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
    mask = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, out["completion_ids"].size(1)
        )
    shift = 0.3 * torch.sin(torch.arange(n * t, dtype=torch.float32).view(n, t))
    inputs = dict(out)
    inputs["old_per_token_logps"] = logps - shift
    inputs["advantages"] = torch.linspace(-1.5, 1.5, n)
    return inputs, logps


PAPER = {  # algorithm -> the clipped_objective arguments its paper prescribes
    "grpo": dict(level="token", aggregation="sequence_mean"),
    "dr_grpo": dict(level="token", aggregation="constant"),
    "dapo": dict(level="token", aggregation="token_mean"),
    "gspo": dict(level="sequence", aggregation="sequence_mean"),
}


@pytest.mark.parametrize("algorithm", sorted(PAPER))
def test_trl_loss_under_each_algorithms_settings_is_the_papers_objective(base, tmp_path, algorithm):
    # the untrained model never ends a completion: keep truncated ones in the loss to have one to compare
    trainer = make_trainer(base, tmp_path, algorithm, {"beta": 0.0, "mask_truncated_completions": False})
    trainer.model.eval()
    out = batch(trainer, ["vary", "vary"])
    inputs, logps = hand_inputs(trainer, out)
    with torch.no_grad():
        got = trainer._compute_loss(trainer.model, inputs)
    a = trainer.algorithm.trl
    expected = clipped_objective(
        logps,
        inputs["old_per_token_logps"],
        inputs["advantages"],
        inputs["completion_mask"],
        eps_low=a["epsilon"],
        eps_high=a["epsilon_high"],
        max_completion_length=trainer.max_completion_length,
        **PAPER[algorithm],
    )
    assert got.item() == pytest.approx(expected.item(), rel=1e-4, abs=1e-6)
    # and not the objective of another member (the settings are what make the difference)
    others = {
        name: clipped_objective(
            logps,
            inputs["old_per_token_logps"],
            inputs["advantages"],
            inputs["completion_mask"],
            eps_low=a["epsilon"],
            eps_high=a["epsilon_high"],
            max_completion_length=trainer.max_completion_length,
            **kw,
        ).item()
        for name, kw in PAPER.items()
        if kw != PAPER[algorithm]
    }
    assert all(abs(v - got.item()) > 1e-6 for v in others.values()), others


def test_dr_grpo_advantages_are_not_divided_by_std(base, tmp_path):
    trainer = make_trainer(base, tmp_path, "dr_grpo")
    trainer.model.train()
    out = batch(trainer, ["vary", "vary"])
    assert out["advantages"].tolist() == pytest.approx([-0.5, 0.5, -0.5, 0.5] * 2)
    grpo = make_trainer(base, tmp_path, "grpo")
    grpo.model.train()
    std = (1 / 3) ** 0.5  # unbiased std of 0, 1, 0, 1
    assert batch(grpo, ["vary", "vary"])["advantages"].abs().tolist() == pytest.approx([0.5 / (std + 1e-4)] * 8)


def test_dapo_drops_zero_variance_groups_and_refills_the_batch(base, tmp_path):
    trainer = make_trainer(
        base, tmp_path, "dapo", {"max_resample_rounds": 8}, data=rows(["flat", "vary", "flat", "flat", "vary", "flat"])
    )
    trainer.model.train()
    out = batch(trainer, ["flat", "flat"])  # both groups carry no signal
    assert out["completion_ids"].shape[0] == 2 * G
    assert (out["advantages"] != 0).all()  # only 'vary' groups are left
    assert out["completion_mask"].sum() == out["num_items_in_batch"] > 0
    metrics = trainer._metrics["train"]
    assert metrics["dapo/groups_dropped"][-1] >= 2 and metrics["dapo/groups_refilled"][-1] >= 2
    assert metrics["dapo/groups_padded"][-1] == 0


def test_dapo_pads_with_masked_groups_when_resampling_runs_out(base, tmp_path):
    trainer = make_trainer(base, tmp_path, "dapo", {"max_resample_rounds": 1}, data=rows(["flat"] * 4))
    trainer.model.train()
    out = batch(trainer, ["flat", "flat"])
    assert out["completion_ids"].shape[0] == 2 * G  # the batch keeps its size
    assert out["completion_mask"].sum() == 0 and out["num_items_in_batch"] == 0  # padding is out of the loss
    assert trainer._metrics["train"]["dapo/groups_padded"][-1] == 2


def test_dynamic_sampling_is_off_for_other_algorithms(base, tmp_path):
    trainer = make_trainer(base, tmp_path, "grpo")
    trainer.model.train()
    out = batch(trainer, ["flat", "vary"])
    assert (out["advantages"][:G] == 0).all() and "dapo/groups_dropped" not in trainer._metrics["train"]


def test_advantage_options_replace_trls_advantages(base, tmp_path):
    trainer = make_trainer(base, tmp_path, "grpo", {"advantage_norm": "rank", "negative_advantage_scale": 0.5})
    trainer.model.train()
    out = batch(trainer, ["vary", "vary"])
    ranks = rank_advantages(torch.tensor([0.0, 1.0, 0.0, 1.0] * 2), G)
    assert out["advantages"].tolist() == pytest.approx([r * (0.5 if r < 0 else 1.0) for r in ranks.tolist()])
    population = make_trainer(base, tmp_path, "dapo", {"advantage_norm": "population", "dynamic_sampling": False})
    population.model.train()
    batch(population, ["vary", "vary"])
    assert len(population._history) == 2 * G  # the next batch is normalised with these rewards too


def test_dgpo_is_grpo_plus_the_dpo_term_and_grpo_at_coef_zero(base, tmp_path):
    from trl import GRPOTrainer

    coef, beta = 0.7, 0.2
    trainer = make_trainer(
        base,
        tmp_path,
        "dgpo",
        {"dpo_coef": coef, "dpo_beta": beta, "beta": 0.0},
        funcs=(lean_tactic, alternating),
        verified="lean_tactic",
    )
    trainer.model.eval()
    out = batch(trainer, ["vary", "flat"])
    assert out["dgpo_verified"].tolist() == [True, False, False, False] * 2
    assert out["dgpo_group"].tolist() == [0] * G + [1] * G
    inputs, logps = hand_inputs(trainer, out)
    with torch.no_grad():
        total = trainer._compute_loss(trainer.model, inputs)
        grpo = GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
    mask = inputs["completion_mask"]
    pairs = dpo_pairs(inputs["dgpo_group"], inputs["dgpo_verified"])
    assert pairs == [(0, 1), (0, 2), (0, 3), (4, 5), (4, 6), (4, 7)]
    # the reference is the starting model: here it equals the policy, so every margin is 0 -> log 2
    term = dpo_loss(sequence_logps(logps, mask), sequence_logps(inputs["dgpo_ref_logps"], mask), pairs, beta)
    assert term.item() == pytest.approx(torch.log(torch.tensor(2.0)).item(), rel=1e-4)
    assert total.item() == pytest.approx(grpo.item() + coef * term.item(), rel=1e-4)
    assert trainer._metrics["eval"]["dgpo/pairs"][-1] == 6

    off = make_trainer(
        base, tmp_path, "dgpo", {"dpo_coef": 0.0, "beta": 0.0}, funcs=(lean_tactic, alternating), verified="lean_tactic"
    )
    off.model.eval()
    with torch.no_grad():
        assert off._compute_loss(off.model, inputs).item() == GRPOTrainer._compute_loss(off, off.model, inputs).item()


def test_dgpo_needs_a_lean_reward(base, tmp_path):
    with pytest.raises(ValueError, match="dgpo needs a Lean reward"):
        make_trainer(base, tmp_path, "dgpo", funcs=(alternating,))
