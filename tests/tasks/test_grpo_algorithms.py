"""The GRPO family's defining properties, on hand-made tensors (tasks/grpo/algorithms.py).

Each test fails if the property it names is lost; expected values are computed by hand
in the test, not by the function under test.
"""

from __future__ import annotations

import math

import pytest
import torch

from storage.errors import InputError
from tasks.grpo.algorithms import (
    ALGORITHMS,
    advantages_for,
    algorithms,
    canonical_algorithm,
    clipped_objective,
    dpo_loss,
    dpo_pairs,
    fill_batch,
    group_advantages,
    population_advantages,
    rank_advantages,
    resolve_algorithm,
    scale_advantages,
    sequence_logps,
    winsorized_advantages,
    zero_variance_groups,
)

T = torch.tensor


def _std(xs):  # unbiased, as TRL
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


# -- advantages ---------------------------------------------------------------------------


def test_grpo_advantage_is_group_standardised():
    r = T([0.0, 1.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    adv = group_advantages(r, 4)
    s = _std([0, 1, 1, 0])
    assert adv[:4].tolist() == pytest.approx([-0.5 / (s + 1e-4), 0.5 / (s + 1e-4), 0.5 / (s + 1e-4), -0.5 / (s + 1e-4)])
    assert adv[4:].tolist() == [0.0] * 4  # a zero-variance group has no signal


def test_dr_grpo_advantage_is_not_divided_by_std():
    r = T([0.0, 1.0, 3.0, 0.0])
    assert group_advantages(r, 4, scale=False).tolist() == pytest.approx([-1.0, 0.0, 2.0, -1.0])
    # scaling the rewards scales Dr. GRPO's advantages; GRPO's are (almost) invariant
    assert group_advantages(10 * r, 4, scale=False).tolist() == pytest.approx([-10.0, 0.0, 20.0, -10.0])
    assert group_advantages(10 * r, 4).tolist() == pytest.approx(group_advantages(r, 4).tolist(), rel=1e-3)


def test_winsorized_advantage_clips_rewards_to_group_quantiles_then_standardises():
    r = T([0.0, 1.0, 2.0, 100.0])
    # torch.quantile (linear): q=0.25 -> 0.75, q=0.75 -> 26.5
    clipped = [0.75, 1.0, 2.0, 26.5]
    m, s = sum(clipped) / 4, _std(clipped)
    expected = [(c - m) / (s + 1e-4) for c in clipped]
    assert winsorized_advantages(r, 4, 0.25).tolist() == pytest.approx(expected, rel=1e-5)


def test_rank_advantage_uses_centred_ranks_with_shared_ties():
    r = T([5.0, 1.0, 1.0, 3.0])
    # ranks: 1.0 and 1.0 share (0+1)/2 = 0.5; 3.0 -> 2; 5.0 -> 3; then rank/3 - 0.5
    assert rank_advantages(r, 4).tolist() == pytest.approx([0.5, 0.5 / 3 - 0.5, 0.5 / 3 - 0.5, 2 / 3 - 0.5])


def test_population_advantage_uses_history_and_batch():
    history = [0.0, 0.0, 1.0]
    r = T([1.0, 0.0])
    pool = [0.0, 0.0, 1.0, 1.0, 0.0]
    m, s = sum(pool) / 5, _std(pool)
    assert population_advantages(r, history).tolist() == pytest.approx([(1 - m) / (s + 1e-4), (0 - m) / (s + 1e-4)])


def test_asymmetric_scales_apply_by_sign():
    adv = T([2.0, -2.0, 0.0])
    assert scale_advantages(adv, 1.5, 0.25).tolist() == [3.0, -0.5, 0.0]


def test_advantages_for_dispatches_each_option():
    r = T([0.0, 1.0, 2.0, 4.0])
    assert advantages_for(r, 4, {"advantage_norm": "rank"}).tolist() == rank_advantages(r, 4).tolist()
    assert advantages_for(r, 4, {"advantage_norm": "population"}, [1.0]).tolist() == pytest.approx(
        population_advantages(r, [1.0]).tolist()
    )
    scaled = advantages_for(r, 4, {"positive_advantage_scale": 2.0, "negative_advantage_scale": 0.5})
    base = group_advantages(r, 4)
    assert scaled.tolist() == pytest.approx([a * (2.0 if a > 0 else 0.5) for a in base.tolist()])
    assert advantages_for(r, 4, {"scale_std": False}).tolist() == pytest.approx([-1.75, -0.75, 0.25, 2.25])


# -- the clipped objectives ---------------------------------------------------------------


def test_grpo_objective_is_mean_of_per_sequence_token_means():
    logp = T([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    mask = T([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    adv = T([1.0, -2.0])
    # ratio 1 everywhere: per-token loss = -A; seq 1: mean -1; seq 2: mean 2 -> (−1 + 2)/2
    assert clipped_objective(logp, logp, adv, mask, eps_low=0.2, eps_high=0.2).item() == pytest.approx(0.5)


def test_dr_grpo_objective_divides_by_a_constant_not_the_sequence_length():
    logp = torch.zeros(2, 4)
    adv = T([1.0, 1.0])
    short = T([[1.0, 0, 0, 0], [1.0, 0, 0, 0]])
    long = T([[1.0, 1, 1, 1], [1.0, 0, 0, 0]])
    kw = dict(eps_low=0.2, eps_high=0.2, aggregation="constant", max_completion_length=4)
    # sum of -A over tokens / (2 sequences * 4)
    assert clipped_objective(logp, logp, adv, short, **kw).item() == pytest.approx(-2 / 8)
    assert clipped_objective(logp, logp, adv, long, **kw).item() == pytest.approx(-5 / 8)
    # GRPO's per-sequence mean would not see the longer sequence at all
    grpo = dict(eps_low=0.2, eps_high=0.2)
    assert (
        clipped_objective(logp, logp, adv, short, **grpo).item()
        == clipped_objective(logp, logp, adv, long, **grpo).item()
    )


def test_dapo_clips_asymmetrically():
    old = torch.zeros(2, 1)
    mask = torch.ones(2, 1)
    up = torch.log(T([[1.25], [1.25]]))  # inside 1 + 0.28, outside 1 + 0.2
    adv = T([1.0, 1.0])
    dapo = clipped_objective(up, old, adv, mask, eps_low=0.2, eps_high=0.28, aggregation="token_mean")
    sym = clipped_objective(up, old, adv, mask, eps_low=0.2, eps_high=0.2, aggregation="token_mean")
    assert dapo.item() == pytest.approx(-1.25)  # not clipped: clip-higher lets it rise
    assert sym.item() == pytest.approx(-1.2)
    down = torch.log(T([[0.7], [0.7]]))
    neg = T([-1.0, -1.0])
    # ratio 0.7 < 1 - 0.2 with A < 0: min(0.7·(−1), 0.8·(−1)) = −0.8 -> loss 0.8 (lower bound still 0.2)
    assert clipped_objective(
        down, old, neg, mask, eps_low=0.2, eps_high=0.28, aggregation="token_mean"
    ).item() == pytest.approx(0.8)


def test_dapo_averages_over_tokens_not_sequences():
    logp = torch.zeros(2, 3)
    mask = T([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    adv = T([1.0, -2.0])
    # tokens: three of −1 and one of +2 -> (−3 + 2) / 4
    got = clipped_objective(logp, logp, adv, mask, eps_low=0.2, eps_high=0.28, aggregation="token_mean")
    assert got.item() == pytest.approx(-0.25)


def test_gspo_ratio_is_exp_of_mean_token_log_ratio_and_clipped_per_sequence():
    old = torch.zeros(1, 3)
    logp = T([[0.3, -0.1, 0.1]])  # token ratios e^0.3, e^-0.1, e^0.1; mean log-ratio 0.1
    mask = torch.ones(1, 3)
    adv = T([1.0])
    s = math.exp(0.1)
    got = clipped_objective(logp, old, adv, mask, eps_low=0.2, eps_high=0.2, level="sequence")
    assert got.item() == pytest.approx(-s)  # every token carries the same sequence ratio, not clipped
    token = clipped_objective(logp, old, adv, mask, eps_low=0.2, eps_high=0.2, level="token")
    assert token.item() == pytest.approx(-(min(math.exp(0.3), 1.2) + math.exp(-0.1) + math.exp(0.1)) / 3)
    tight = clipped_objective(logp, old, adv, mask, eps_low=3e-4, eps_high=4e-4, level="sequence")
    assert tight.item() == pytest.approx(-(1 + 4e-4))  # the whole sequence is clipped at once


# -- DAPO's dynamic sampling --------------------------------------------------------------


def test_zero_variance_groups_are_found():
    r = T([1.0, 1.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5])
    assert zero_variance_groups(r, 4).tolist() == [False, True]


def test_fill_batch_prefers_informative_groups_and_pads_only_when_short():
    assert fill_batch([0, 3, 5], [1, 2], 2) == ([0, 3], [])
    assert fill_batch([4], [1, 2], 3) == ([4, 1, 2], [1, 2])


# -- DGPO -----------------------------------------------------------------------------------


def test_dpo_pairs_are_verified_failed_pairs_inside_a_group():
    groups = T([0, 0, 0, 1, 1, 1])
    verified = T([True, False, False, True, True, False])
    assert dpo_pairs(groups, verified) == [(0, 1), (0, 2), (3, 5), (4, 5)]
    assert dpo_pairs(T([0, 0]), T([True, True])) == []


def test_dpo_loss_matches_hand_computation():
    per_token = T([[-1.0, -1.0], [-2.0, -1.0], [-0.5, -0.5]])
    mask = T([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    pol = sequence_logps(per_token, mask)
    assert pol.tolist() == [-2.0, -2.0, -1.0]
    ref = T([-2.5, -1.5, -1.0])
    beta = 0.5
    # pair (0, 1): margin (−2 + 2.5) − (−2 + 1.5) = 1.0; pair (2, 1): (−1 + 1) − (−0.5) = 0.5
    expected = (-math.log(1 / (1 + math.exp(-0.5))) - math.log(1 / (1 + math.exp(-0.25)))) / 2
    assert dpo_loss(pol, ref, [(0, 1), (2, 1)], beta).item() == pytest.approx(expected)
    assert dpo_loss(pol, ref, [], beta).item() == 0.0


# -- the table and algorithm_config -----------------------------------------------------------


def test_each_algorithm_maps_to_the_papers_trl_settings():
    trl = {a.name: resolve_algorithm(a.name, {}).trl for a in algorithms()}
    assert trl["grpo"]["loss_type"] == "grpo" and trl["grpo"]["beta"] > 0
    assert trl["dr_grpo"]["loss_type"] == "dr_grpo" and trl["dr_grpo"]["scale_rewards"] == "none"
    assert (
        trl["dapo"]["loss_type"],
        trl["dapo"]["epsilon"],
        trl["dapo"]["epsilon_high"],
        trl["dapo"]["beta"],
        trl["dapo"]["mask_truncated_completions"],
    ) == ("dapo", 0.2, 0.28, 0.0, True)
    assert trl["gspo"]["importance_sampling_level"] == "sequence" and trl["gspo"]["epsilon"] == 3e-4
    assert resolve_algorithm("dapo", {}).dynamic_sampling
    assert resolve_algorithm("dgpo", {"dpo_coef": 0}).dpo_coef == 0.0
    assert resolve_algorithm("dgpo", {"use_dpo_loss": False}).dpo_coef == 0.0
    assert all(a.objective and a.paper for a in algorithms())


def test_lean_grpo_spellings_are_accepted():
    assert canonical_algorithm("drgrpo") == "dr_grpo"
    assert canonical_algorithm("DGPO") == "dgpo"
    assert canonical_algorithm("GSPO") == "gspo"
    with pytest.raises(InputError, match="unknown algorithm 'ppo'.*grpo, dr_grpo, dapo, gspo, dgpo"):
        canonical_algorithm("ppo")


def test_unknown_algorithm_config_key_lists_the_accepted_keys():
    with pytest.raises(InputError) as e:
        resolve_algorithm("dapo", {"consensus_weight": 0.3})
    assert "'consensus_weight' is not an option of algorithm 'dapo'" in str(e.value)
    for key in ALGORITHMS["dapo"].options:
        assert key in e.value.fix


def test_bad_algorithm_config_values_are_refused():
    with pytest.raises(InputError, match="advantage_norm='zscore'"):
        resolve_algorithm("grpo", {"advantage_norm": "zscore"})
    with pytest.raises(InputError, match="Dr. GRPO"):
        resolve_algorithm("dr_grpo", {"advantage_norm": "rank"})
    with pytest.raises(InputError, match="epsilon_high"):
        resolve_algorithm("dapo", {"epsilon_high": -1})
    with pytest.raises(InputError, match="population_size"):
        resolve_algorithm("dapo", {"population_size": 1})


def test_unbiased_pass_at_k():
    from tasks.grpo.evaluate import unbiased_pass_at_k  # the estimator GRPO's evaluation uses

    assert unbiased_pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert unbiased_pass_at_k(4, 0, 4) == 0.0
    assert unbiased_pass_at_k(4, 1, 4) == 1.0
    assert unbiased_pass_at_k(5, 2, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))
