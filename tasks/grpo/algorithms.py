"""The GRPO family as published, and the `algorithm_config` each one accepts.

Each algorithm is a set of `trl.GRPOConfig` settings (where TRL implements the paper)
plus the pieces TRL lacks, which `tasks.grpo.lean_trainer.LeanGRPOTrainer` adds through
TRL's hooks: DAPO's dynamic sampling, DGPO's DPO term, and lean-grpo's advantage
treatments. The math those pieces need lives here as small pure functions (tensors
in, tensors out) so that each property is tested on hand-made tensors; see
docs/grpo.md for the formulas and the papers.

    python -c "from tasks.grpo.algorithms import algorithms; [print(a.name, '|', a.objective) for a in algorithms()]"
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.errors import InputError

ADVANTAGE_NORMS = ("standard", "winsorized", "rank", "population")

# Options every algorithm accepts (lean-grpo's advantage treatments), with defaults.
ADVANTAGE_OPTIONS: dict[str, Any] = {
    "advantage_norm": "standard",
    "population_size": 100,
    "winsor_quantile": 0.1,
    "positive_advantage_scale": 1.0,
    "negative_advantage_scale": 1.0,
}


@dataclass(frozen=True)
class Algorithm:
    """One member of the family: what it optimises, where it is from, how TRL runs it."""

    name: str
    objective: str  # one line
    paper: str
    fixed: dict[str, Any]  # GRPOConfig settings that define the algorithm (never overridden)
    options: dict[str, Any]  # algorithm_config keys -> default; GRPOConfig names go to GRPOConfig
    notes: str = ""


# algorithm_config keys that are GRPOConfig arguments (the rest are ours).
TRL_OPTION_KEYS = ("epsilon", "epsilon_high", "beta", "mask_truncated_completions")

_ALGORITHMS = (
    Algorithm(
        "grpo",
        "mean over the group of the per-sequence token mean of min(r·Â, clip(r, 1−ε, 1+ε)·Â) − β·KL(π‖π_ref), "
        "Â = (R − mean R) / std R",
        "Shao et al. 2024, DeepSeekMath (arXiv 2402.03300)",
        {"loss_type": "grpo", "scale_rewards": "group", "importance_sampling_level": "token"},
        {"epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.04, "mask_truncated_completions": False, **ADVANTAGE_OPTIONS},
    ),
    Algorithm(
        "dr_grpo",
        "GRPO without the 1/|o| length normalisation and without dividing by std: Â = R − mean R, "
        "the token sum divided by the constant G·L_max",
        "Liu et al. 2025, Understanding R1-Zero-Like Training (arXiv 2503.20783)",
        {"loss_type": "dr_grpo", "scale_rewards": "none", "importance_sampling_level": "token"},
        {
            "epsilon": 0.2,
            "epsilon_high": 0.2,
            "beta": 0.0,
            "mask_truncated_completions": False,
            **{k: v for k, v in ADVANTAGE_OPTIONS.items() if k not in ("population_size", "winsor_quantile")},
        },
        "advantage_norm must stay 'standard' (R − mean R): dividing by any spread is what Dr. GRPO removes.",
    ),
    Algorithm(
        "dapo",
        "1/Σ|o| · Σ over all tokens of min(r·Â, clip(r, 1−ε_low, 1+ε_high)·Â), ε_low 0.2, ε_high 0.28, no KL, "
        "only groups with 0 < #correct < G (dynamic sampling), overlong filtering and soft punishment",
        "Yu et al. 2025, DAPO (arXiv 2503.14476)",
        {"loss_type": "dapo", "scale_rewards": "group", "importance_sampling_level": "token"},
        {
            "epsilon": 0.2,
            "epsilon_high": 0.28,
            "beta": 0.0,
            "mask_truncated_completions": True,
            "dynamic_sampling": True,
            "max_resample_rounds": 4,
            **ADVANTAGE_OPTIONS,
        },
    ),
    Algorithm(
        "gspo",
        "mean over the group of min(s·Â, clip(s, 1−ε, 1+ε)·Â) with the sequence ratio "
        "s = (π(o|q)/π_old(o|q))^(1/|o|), clipped per sequence",
        "Zheng et al. 2025, Group Sequence Policy Optimization (arXiv 2507.18071)",
        {"loss_type": "grpo", "scale_rewards": "group", "importance_sampling_level": "sequence"},
        {"epsilon": 3e-4, "epsilon_high": 4e-4, "beta": 0.0, "mask_truncated_completions": False, **ADVANTAGE_OPTIONS},
        "It differs from GRPO only off-policy: set training.steps_per_generation > 1 (or num_iterations > 1).",
    ),
    Algorithm(
        "dgpo",
        "GRPO loss + dpo_coef · mean over (verified, failed) pairs of a group of "
        "−log σ(β_dpo·[(log π − log π_ref)(winner) − (log π − log π_ref)(loser)])",
        "lean-grpo's Direct GRPO: GRPO (arXiv 2402.03300) plus DPO (Rafailov et al. 2023, arXiv 2305.18290)",
        {"loss_type": "grpo", "scale_rewards": "group", "importance_sampling_level": "token"},
        {
            "epsilon": 0.2,
            "epsilon_high": 0.2,
            "beta": 0.04,
            "mask_truncated_completions": False,
            "dpo_beta": 0.1,
            "dpo_coef": 0.5,
            "use_dpo_loss": True,
            "verified_reward": 1.0,
            **ADVANTAGE_OPTIONS,
        },
        "A completion is verified when the Lean reward (lean_tactic or lean_proof) reaches verified_reward.",
    ),
)
ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in _ALGORITHMS}
# lean-grpo's spellings.
ALIASES = {"drgrpo": "dr_grpo", "dr-grpo": "dr_grpo", "dgrpo": "dgpo"}


def algorithms() -> list[Algorithm]:
    """Every algorithm, in the order `dojoflow grpo algorithms` prints them."""
    return list(_ALGORITHMS)


def canonical_algorithm(name: str) -> str:
    """`name` as Dojoflow spells it (case-insensitive; lean-grpo's `drgrpo`, `DGPO` accepted)."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in ALGORITHMS:
        raise InputError(
            "algorithm",
            f"unknown algorithm {name!r}",
            f"Use one of {', '.join(ALGORITHMS)} (lean-grpo's drgrpo and DGPO are accepted too).",
        )
    return key


@dataclass(frozen=True)
class ResolvedAlgorithm:
    """An algorithm with its `algorithm_config` checked and defaults filled in."""

    name: str
    trl: dict[str, Any]  # GRPOConfig arguments: the fixed ones and the TRL options
    options: dict[str, Any] = field(default_factory=dict)  # our options (advantage, dynamic sampling, DPO)

    @property
    def custom_advantages(self) -> bool:
        o = self.options
        return (
            o.get("advantage_norm", "standard") != "standard"
            or o.get("positive_advantage_scale", 1.0) != 1.0
            or o.get("negative_advantage_scale", 1.0) != 1.0
        )

    @property
    def dynamic_sampling(self) -> bool:
        return bool(self.options.get("dynamic_sampling", False))

    @property
    def dpo_coef(self) -> float:
        if not self.options.get("use_dpo_loss", False):
            return 0.0
        return float(self.options.get("dpo_coef", 0.0))


def resolve_algorithm(name: str, config: dict[str, Any] | None, where: str = "algorithm_config") -> ResolvedAlgorithm:
    """Check `config` against what `name` accepts; an unknown key or bad value is an InputError."""
    algo = ALGORITHMS[canonical_algorithm(name)]
    config = dict(config or {})
    unknown = sorted(set(config) - set(algo.options))
    if unknown:
        raise InputError(
            where,
            f"{', '.join(map(repr, unknown))} is not an option of algorithm {algo.name!r}",
            f"Use only these keys: {', '.join(sorted(algo.options))}.",
        )
    merged = {**algo.options, **config}
    _check_options(algo, merged, where)
    trl = {**algo.fixed, **{k: merged[k] for k in TRL_OPTION_KEYS}}
    ours = {k: v for k, v in merged.items() if k not in TRL_OPTION_KEYS}
    return ResolvedAlgorithm(algo.name, trl, ours)


def _check_options(algo: Algorithm, o: dict[str, Any], where: str) -> None:
    def bad(key: str, problem: str, fix: str) -> InputError:
        return InputError(f"{where}.{key}", f"{key}={o[key]!r} {problem}", fix)

    norm = o.get("advantage_norm", "standard")
    if norm not in ADVANTAGE_NORMS:
        raise bad("advantage_norm", "is not an advantage normalisation", f"Use one of {', '.join(ADVANTAGE_NORMS)}.")
    if algo.name == "dr_grpo" and norm != "standard":
        raise bad(
            "advantage_norm",
            "changes Dr. GRPO's advantage R − mean R",
            "Leave advantage_norm at 'standard' for dr_grpo, or pick another algorithm.",
        )
    for key in (
        "epsilon",
        "epsilon_high",
        "beta",
        "dpo_beta",
        "dpo_coef",
        "positive_advantage_scale",
        "negative_advantage_scale",
    ):
        if key in o and (not isinstance(o[key], (int, float)) or isinstance(o[key], bool) or o[key] < 0):
            raise bad(key, "must be a number ≥ 0", f"Set {key} to a non-negative number.")
    if "population_size" in o and (not isinstance(o["population_size"], int) or o["population_size"] < 2):
        raise bad("population_size", "must be an integer ≥ 2", "Set population_size to 2 or more.")
    if "winsor_quantile" in o and not (
        isinstance(o["winsor_quantile"], (int, float)) and 0 <= o["winsor_quantile"] < 0.5
    ):
        raise bad("winsor_quantile", "must be in [0, 0.5)", "Set winsor_quantile to e.g. 0.1.")
    if "max_resample_rounds" in o and (not isinstance(o["max_resample_rounds"], int) or o["max_resample_rounds"] < 0):
        raise bad("max_resample_rounds", "must be an integer ≥ 0", "Set max_resample_rounds to e.g. 4.")


# -- advantages -------------------------------------------------------------------------

EPS = 1e-4  # TRL's: advantages are (r − mean) / (std + 1e-4)


def _groups(rewards, group_size: int):
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    return rewards.view(-1, group_size)


def group_advantages(rewards, group_size: int, scale: bool = True):
    """GRPO's Â = (R − group mean) / (group std + 1e-4); Dr. GRPO's (scale=False) Â = R − group mean.

    The std is the unbiased one, as TRL computes it.
    """
    g = _groups(rewards, group_size)
    centred = g - g.mean(dim=1, keepdim=True)
    if scale:
        centred = centred / (g.std(dim=1, keepdim=True) + EPS)
    return centred.reshape(-1)


def winsorized_advantages(rewards, group_size: int, quantile: float = 0.1):
    """Rewards clipped to their group's [q, 1−q] quantiles (linear interpolation), then standardised."""
    import torch

    g = _groups(rewards, group_size)
    low = torch.quantile(g, quantile, dim=1, keepdim=True)
    high = torch.quantile(g, 1 - quantile, dim=1, keepdim=True)
    clipped = torch.minimum(torch.maximum(g, low), high)
    return group_advantages(clipped.reshape(-1), group_size)


def rank_advantages(rewards, group_size: int):
    """Centred ranks in [−0.5, 0.5]: rank/(G−1) − 0.5 per group, ties sharing their mean rank."""

    g = _groups(rewards, group_size)
    less = (g.unsqueeze(2) > g.unsqueeze(1)).sum(dim=2).to(g.dtype)  # how many are smaller
    equal = (g.unsqueeze(2) == g.unsqueeze(1)).sum(dim=2).to(g.dtype)  # itself included
    rank = less + (equal - 1) / 2
    return (rank / max(group_size - 1, 1) - 0.5).reshape(-1)


def population_advantages(rewards, history: Sequence[float]):
    """(R − mean) / (std + 1e-4) over a population: the last rewards seen (`history`) and this batch."""
    import torch

    pool = torch.cat([torch.as_tensor(list(history), dtype=rewards.dtype), rewards.reshape(-1)])
    std = pool.std() if pool.numel() > 1 else torch.zeros((), dtype=rewards.dtype)
    return (rewards - pool.mean()) / (std + EPS)


def scale_advantages(advantages, positive: float = 1.0, negative: float = 1.0):
    """Positive advantages times `positive`, negative ones times `negative` (lean-grpo's asymmetric scales)."""
    import torch

    return torch.where(advantages > 0, advantages * positive, advantages * negative)


def advantages_for(rewards, group_size: int, options: dict[str, Any], history: Sequence[float] = ()):
    """The advantages an algorithm's options ask for (the history is used by 'population' only)."""
    norm = options.get("advantage_norm", "standard")
    if norm == "winsorized":
        adv = winsorized_advantages(rewards, group_size, options.get("winsor_quantile", 0.1))
    elif norm == "rank":
        adv = rank_advantages(rewards, group_size)
    elif norm == "population":
        adv = population_advantages(rewards, history)
    else:
        adv = group_advantages(rewards, group_size, scale=options.get("scale_std", True))
    return scale_advantages(
        adv, options.get("positive_advantage_scale", 1.0), options.get("negative_advantage_scale", 1.0)
    )


# -- DAPO's dynamic sampling ------------------------------------------------------------


def zero_variance_groups(rewards, group_size: int):
    """Boolean per group: every reward in it is equal (no learning signal; DAPO drops it)."""
    g = _groups(rewards, group_size)
    return (g == g[:, :1]).all(dim=1)


def fill_batch(kept_groups: list[int], dropped_groups: list[int], wanted: int) -> tuple[list[int], list[int]]:
    """Which groups make up a batch of `wanted` groups: informative ones first, then dropped ones as padding.

    Returns (groups in the batch, those of them that are padding). Padding is only used
    when resampling ran out, and its tokens are masked out of the loss by the trainer.
    """
    chosen = kept_groups[:wanted]
    padding = dropped_groups[: wanted - len(chosen)]
    return chosen + padding, padding


# -- DGPO's DPO term --------------------------------------------------------------------


def dpo_pairs(group_ids, verified) -> list[tuple[int, int]]:
    """Every (verified, failed) pair of rows with the same group id, as row indices."""
    gid = [int(x) for x in group_ids.tolist()]
    ok = [bool(x) for x in verified.tolist()]
    pairs = []
    for w in range(len(gid)):
        if not ok[w]:
            continue
        for lo in range(len(gid)):
            if not ok[lo] and gid[lo] == gid[w]:
                pairs.append((w, lo))
    return pairs


def sequence_logps(per_token_logps, mask):
    """log π(o|q): the sum of the completion's token log-probs."""
    return (per_token_logps * mask).sum(dim=-1)


def dpo_loss(policy_logps, ref_logps, pairs: list[tuple[int, int]], beta: float):
    """Mean over pairs of −log σ(β·[(π − π_ref)(w) − (π − π_ref)(l)]) on sequence log-probs; 0 without pairs."""
    import torch

    if not pairs:
        return policy_logps.sum() * 0.0
    w = torch.tensor([p[0] for p in pairs], device=policy_logps.device)
    lo = torch.tensor([p[1] for p in pairs], device=policy_logps.device)
    margin = (policy_logps[w] - ref_logps[w]) - (policy_logps[lo] - ref_logps[lo])
    return -torch.nn.functional.logsigmoid(beta * margin).mean()


# -- the published objectives (the reference TRL's settings are tested against) ---------


def clipped_objective(
    logps,
    old_logps,
    advantages,
    mask,
    *,
    eps_low: float,
    eps_high: float,
    level: str = "token",
    aggregation: str = "sequence_mean",
    max_completion_length: int | None = None,
):
    """The clipped surrogate loss of the family, written out from the papers (no KL term).

    level 'token': r = exp(log π − log π_old) per token (GRPO, Dr. GRPO, DAPO);
    'sequence': s = exp(mean over the sequence of the token log-ratios) (GSPO).
    aggregation 'sequence_mean' (GRPO, GSPO): mean over sequences of the token mean;
    'token_mean' (DAPO): sum over all tokens / number of tokens;
    'constant' (Dr. GRPO): sum over all tokens / (sequences · max_completion_length).
    """
    import torch

    log_ratio = logps - old_logps
    if level == "sequence":
        log_ratio = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1)).unsqueeze(-1)
    ratio = torch.exp(log_ratio)
    adv = advantages.unsqueeze(-1)
    per_token = -torch.min(ratio * adv, torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv)
    per_token = per_token.expand_as(mask) * mask
    if aggregation == "sequence_mean":
        return (per_token.sum(-1) / mask.sum(-1).clamp(min=1)).mean()
    if aggregation == "token_mean":
        return per_token.sum() / mask.sum().clamp(min=1)
    if aggregation == "constant":
        if max_completion_length is None:
            raise ValueError("aggregation 'constant' needs max_completion_length")
        return per_token.sum() / (mask.shape[0] * max_completion_length)
    raise ValueError(f"unknown aggregation {aggregation!r}")
