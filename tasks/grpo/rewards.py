"""Rewards decided by Lean, with TRL's reward-function signature.

Every reward here is a callable `f(prompts, completions, **columns) -> list[float | None]`
(TRL calls it with the dataset's other columns repeated once per generation). The
Lean rewards read two columns that `tasks.grpo.data` writes: `theorem` (a
`TheoremSpec` as JSON) and, in tactic mode, `prefix` (the traced tactics that lead
from the theorem's start to the prompt's state, as JSON) and `goals` (that state).

- `lean_tactic`: run the completion as one tactic on the state. Finished, and the whole
  proof (prefix + tactic) proved under the verdict rule (tasks/lean/verdict.py): `finished`.
  Nothing is paid for a step (issue 27): a tactic that changes the state (a `have` of a true
  fact, a rewrite back and forth) is no proof, and a goal closed in an unfinished proof is paid
  only through the finished proof's verdict (nothing checks how it was closed: a header lemma
  proved by `sorry` closes goals too, issue 16): such a tactic gets 0, as does a no-op or a
  repetition. A Lean error: `error_penalty`; the backend's own timeout (its structured status,
  never a message's words): `timeout_penalty`. `valid_step` and `goal_drop_bonus` are paid
  nowhere (kept so configs and presets that set them load).
- `lean_proof`: check the completion as a whole proof; `finished` only when
  `tasks.lean.verdict.judge` says proved; `unverified` pays None; a backend that timed out
  (`ProofCheck.timed_out`) `timeout_penalty`; otherwise `error_penalty`, plus, when
  `partial_credit` is on and Lean reported an error in the proof, `partial_step` per goal Lean
  reports closed before the first error (goal counts from its answers: the fewest goals any
  state reached, below the start's; a step that leaves the goals as they were, or opens goals
  and closes them again, earns nothing); never for a proof rejected as a cheat (sorry, an
  axiom outside the allow-list, another statement, a construct the guard refuses, a proof
  that silenced Lean's statement or axiom check), whatever the preset.
- `progress`: the trained progress model's predicted steps remaining after the traced
  tactic minus after the completion (positive: the completion is predicted to leave
  fewer steps than the traced one). Lean is not asked.
- `format`: 1 for a completion of the mode's shape (tactic: one non-empty line;
  proof: non-empty, no Markdown fence, no restated `theorem`), else 0.
- `overlong`: DAPO's soft overlong punishment (`trl.rewards.get_soft_overlong_punishment`).

A completion that contains `sorry`/`admit` or a construct `guard.forbidden_construct`
refuses never reaches Lean and is never rewarded: it gets `error_penalty` (≤ 0) from
the Lean rewards and 0 from `format`. A backend failure (crash, unreachable) is not a
verdict: the completion gets None (TRL leaves it out of the advantages), and the
failure is counted. Results are cached by content: (theorem, prefix, completion).
Completions of one batch are checked concurrently (`RewardSettings.workers` threads).

    python -c "help('tasks.grpo.rewards')"
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from storage.lean_text import is_sorry
from storage.tactic_text import is_finished

from .config import RewardSettings

log = logging.getLogger(__name__)


def completion_text(completion) -> str:
    """The text of a completion: a string, or TRL's chat form `[{"role": "assistant", "content": ...}]`."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        return str(completion[-1].get("content", ""))
    return str(completion)


def tactic_of(text: str) -> str:
    """The tactic a tactic-mode completion proposes: the whole completion, stripped
    (a tactic may span lines, e.g. `induction xs with` and its cases)."""
    return text.strip()


def proof_of(text: str) -> str:
    r"""The tactic block of a proof-mode completion (a leading `by` or `:= by` removed; the
    lines' indentation kept, so they stay aligned).

    >>> proof_of(":= by\n  intro n\n  simp"), proof_of("by simp"), proof_of("bysimp")
    ('  intro n\n  simp', 'simp', 'bysimp')
    """
    body = text.strip()
    for lead in (":= by", "by"):
        if body.startswith(lead) and (len(body) == len(lead) or body[len(lead)] in " \n\t"):
            return body[len(lead) :].lstrip(" \t").lstrip("\n").rstrip()
    return body.rstrip()


def _norm(goals: str) -> str:
    return " ".join(goals.split())


def count_goals(goals: str) -> int:
    r"""How many goals a pretty-printed state has (`no goals` or empty: 0): its lines that start
    with `⊢` (each goal has one; a `⊢` inside a hypothesis or a string is not at a line's start).

    >>> count_goals("no goals"), count_goals(""), count_goals("h : p\n⊢ p"), count_goals("⊢ a\n\n⊢ b")
    (0, 0, 1, 2)
    >>> count_goals('h : "⊢ ⊢" = "⊢"\n⊢ p')
    1
    """
    if not goals.strip() or is_finished(goals):
        return 0
    return max(1, sum(line.startswith("⊢") for line in goals.split("\n")))


def goals_of(state) -> int:
    """The number of goals of a backend's ProofState: the count Lean answered where the backend
    kept it (`goal_count`, the REPL's `goals` list), else read from the pretty-printed state."""
    counted = getattr(state, "goal_count", None)
    return counted if counted is not None else count_goals(state.goals)


def refusal(text: str) -> str | None:
    """Why a completion must never be rewarded nor reach Lean, or None."""
    from tasks.lean.guard import forbidden_construct

    if is_sorry(text):
        return "it contains sorry/admit"
    return forbidden_construct(text)


def theorem_from_json(text: str):
    from tasks.lean.backend import TheoremSpec

    d = json.loads(text)
    if d.get("start") is not None:
        d["start"] = tuple(d["start"])
    return TheoremSpec(**d)


@dataclass(frozen=True)
class Outcome:
    """One completion's reward and what decided it (for the accepted share and the logs)."""

    reward: float | None
    verdict: str  # finished | proved | step | closed | noop | repeated | error | timeout | refused | rejected | unverified | failure
    accepted: bool = False  # Lean (or replay) finished / proved it
    failed: bool = False  # rejected only because Lean reported an error in the proof (no cheat found)


class LeanRewarder:
    """Runs completions through a backend, concurrently, with a content cache.

    One per training run; thread-safe. `stats` counts verdicts and cache hits.
    """

    def __init__(self, backend, settings: RewardSettings, allowed_axioms: Sequence[str] | None = None):
        from tasks.lean.guard import DEFAULT_ALLOWED_AXIOMS

        self.backend = backend
        self.settings = settings
        self.allowed_axioms = tuple(DEFAULT_ALLOWED_AXIOMS if allowed_axioms is None else allowed_axioms)
        self._cache: dict[tuple, Outcome] = {}
        # Whole proofs are remembered by the shared verification cache when the backend has it
        # (tasks/lean/verified.py): one cache for search, evaluation and rewards, keyed on the
        # rule version; this memo then keeps tactic outcomes only.
        from tasks.lean.verified import VerifiedBackend

        self._memo_proofs = not isinstance(backend, VerifiedBackend)
        self._states: dict[tuple, object] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="lean-reward")
        self.stats: dict[str, int] = {"checks": 0, "cache_hits": 0}

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] = self.stats.get(key, 0) + n

    def map(self, fn: Callable, items: Sequence[tuple]) -> list[Outcome]:
        """`fn(*item)` for each item, concurrently, cached by the item (its content)."""
        results: dict[int, Outcome] = {}
        todo: dict[tuple, list[int]] = {}
        with self._lock:
            for i, item in enumerate(items):
                key = (fn.__name__, *item)
                if key in self._cache and (self._memo_proofs or fn.__name__ != "proof_outcome"):
                    results[i] = self._cache[key]
                    self.stats["cache_hits"] += 1
                else:
                    todo.setdefault(key, []).append(i)
        futures = {key: self._pool.submit(fn, *key[1:]) for key in todo}
        for key, future in futures.items():
            outcome = future.result()
            self._count("checks")
            self._count(outcome.verdict)
            if outcome.verdict != "failure" and (self._memo_proofs or fn.__name__ != "proof_outcome"):
                with self._lock:
                    self._cache[key] = outcome
            for i in todo[key]:
                results[i] = outcome
        return [results[i] for i in range(len(items))]

    # -- tactic mode -----------------------------------------------------------------
    def _reach(self, theorem_json: str, prefix_json: str):
        """(the backend's result after the traced prefix, the goals visited on the way), cached."""
        key = (theorem_json, prefix_json)
        with self._lock:
            if key in self._states:
                return self._states[key]
        theorem = theorem_from_json(theorem_json)
        result = self.backend.start(theorem)
        visited = [result.state.goals] if result.status == "state" else []
        for tactic in json.loads(prefix_json):
            if result.status != "state":
                break
            result = self.backend.run_tactic(theorem, result.state, tactic)
            if result.status == "state":
                visited.append(result.state.goals)
        with self._lock:
            self._states[key] = (result, tuple(_norm(g) for g in visited))
        return self._states[key]

    def tactic_outcome(self, theorem_json: str, prefix_json: str, text: str) -> Outcome:
        """A closed goal pays only once the finished proof (prefix + tactic) passes the verdict
        rule: a `native_decide` that closes the goal is no proof."""
        s = self.settings
        tactic = tactic_of(text)
        if not tactic or refusal(text):
            return Outcome(s.error_penalty, "refused")
        try:
            reached, visited = self._reach(theorem_json, prefix_json)
            if reached.status != "state":
                log.warning("the traced prefix did not lead to a state (%s: %s)", reached.status, reached.message)
                return Outcome(None, "failure")
            result = self.backend.run_tactic(theorem_from_json(theorem_json), reached.state, tactic)
        except (OSError, RuntimeError, TimeoutError, ConnectionError) as e:
            log.warning("backend failure while checking a tactic: %s", e)
            return Outcome(None, "failure")
        if result.status == "finished":
            proof = "\n".join([*json.loads(prefix_json), tactic])
            return self._judged(theorem_from_json(theorem_json), proof, "finished")
        if result.status == "timeout":  # the backend's own status: its time limit ran out
            return Outcome(s.timeout_penalty, "timeout")
        if result.status == "error":
            return Outcome(s.error_penalty, "error")
        after = _norm(result.state.goals)
        if after == _norm(reached.state.goals):
            return Outcome(0.0, "noop")
        if after in visited:
            return Outcome(0.0, "repeated")  # back to a state the proof already passed: a loop
        if goals_of(result.state) < goals_of(reached.state):
            # A goal closed, the proof unfinished: nothing says how (a header lemma proved by
            # `sorry` closes goals too), and only a finished proof can be judged. A closed goal
            # is paid once the finished proof passes the verdict rule (issue 16 §1), so not here.
            return Outcome(0.0, "closed")
        # A step that changes the state without closing a goal is no proof (issue 27: a `have` of
        # a true fact, a rewrite to a new form): it earns nothing.
        return Outcome(0.0, "step")

    # -- proof mode ------------------------------------------------------------------
    def proof_outcome(self, theorem_json: str, text: str) -> Outcome:
        s = self.settings
        proof = proof_of(text)
        if not proof.strip() or refusal(proof):
            return Outcome(s.error_penalty, "refused")
        theorem = theorem_from_json(theorem_json)
        outcome = self._judged(theorem, proof, "proved")
        if outcome.verdict != "rejected":
            return outcome
        reward = outcome.reward
        if s.partial_credit and outcome.failed:  # never for a cheat: sorry, axioms, another statement
            reward += s.partial_step * self._goals_closed(theorem, proof)
        return Outcome(min(reward, s.finished), "rejected", failed=outcome.failed)

    def _judged(self, theorem, proof: str, success: str) -> Outcome:
        """The whole proof checked and judged by the one verdict rule (tasks/lean/verdict.py):
        proved pays `finished`; unverified (a backend that cannot establish the rule) and a
        backend failure pay nothing either way (None: left out of the advantages)."""
        from tasks.lean.verdict import judge

        s = self.settings
        try:
            check = self.backend.check_proof(theorem, proof)
        except (OSError, RuntimeError, TimeoutError, ConnectionError) as e:
            log.warning("backend failure while checking a proof: %s", e)
            return Outcome(None, "failure")
        verdict = judge(check, proof, self.allowed_axioms)
        if verdict.proved:
            return Outcome(s.finished, success, accepted=True)
        if verdict.status == "error" and getattr(check, "timed_out", False):
            return Outcome(s.timeout_penalty, "timeout")  # the backend's own limit ran out on this proof
        if verdict.status == "error":
            return Outcome(None, "failure")
        if verdict.status == "unverified":
            return Outcome(None, "unverified")
        # Partial credit (proof_outcome) is for a proof Lean found an error in, and nothing else:
        # a proof Lean accepted but the verdict rejected (sorry, an axiom outside the allow-list,
        # another statement) or the guard refused is a cheat, and is paid no more than a failure.
        # A message's words never make a timeout (a proof can make Lean print "timed out"):
        # only the backend's structured flag does (above).
        failed = not check.accepted and refusal(proof) is None
        return Outcome(s.error_penalty, "rejected", failed=failed)

    def _goals_closed(self, theorem, proof: str) -> int:
        """How many goals Lean reports closed before the proof's first error: the start's goal
        count minus the fewest goals any state reached, counted from Lean's answers. Opening
        goals and closing them again (`have h : True`, then `trivial`) or changing nothing
        closes none; the proof is run as Lean's layout splits it (`split_tactics`), never by
        lines. 0 if it cannot start (a whole-proof backend such as kimina runs no single tactics)."""
        from tasks.lean.tactic_split import split_tactics

        try:
            result = self.backend.start(theorem)
            if result.status != "state":
                return 0
            start = fewest = goals_of(result.state)
            for tactic in split_tactics(proof):
                result = self.backend.run_tactic(theorem, result.state, tactic)
                if result.status == "finished":
                    fewest = 0
                if result.status != "state":
                    break  # an error or a timeout stops the count
                fewest = min(fewest, goals_of(result.state))
            return max(0, start - fewest)
        except (OSError, RuntimeError, TimeoutError, ConnectionError, NotImplementedError):
            return 0


# -- reward functions (TRL's signature) ------------------------------------------------


def _log_share(kwargs: dict, name: str, outcomes: list[Outcome]) -> None:
    log_metric = kwargs.get("log_metric")
    if log_metric is None or not outcomes:
        return
    log_metric(f"lean/{name}_accepted", sum(o.accepted for o in outcomes) / len(outcomes))
    log_metric(f"lean/{name}_refused", sum(o.verdict == "refused" for o in outcomes) / len(outcomes))
    log_metric(f"lean/{name}_failures", float(sum(o.verdict == "failure" for o in outcomes)))


class LeanTacticReward:
    """`lean_tactic`: one tactic run on the prompt's state (module docstring)."""

    __name__ = "lean_tactic"

    def __init__(self, rewarder: LeanRewarder):
        self.rewarder = rewarder

    def __call__(self, prompts, completions, theorem, prefix, **kwargs) -> list[float | None]:
        items = [(t, p, completion_text(c)) for t, p, c in zip(theorem, prefix, completions, strict=True)]
        outcomes = self.rewarder.map(self.rewarder.tactic_outcome, items)
        _log_share(kwargs, self.__name__, outcomes)
        return [o.reward for o in outcomes]


class LeanProofReward:
    """`lean_proof`: the completion checked as a whole proof, then judged by the verdict rule."""

    __name__ = "lean_proof"

    def __init__(self, rewarder: LeanRewarder):
        self.rewarder = rewarder

    def __call__(self, prompts, completions, theorem, **kwargs) -> list[float | None]:
        items = [(t, completion_text(c)) for t, c in zip(theorem, completions, strict=True)]
        outcomes = self.rewarder.map(self.rewarder.proof_outcome, items)
        _log_share(kwargs, self.__name__, outcomes)
        return [o.reward for o in outcomes]


class ProgressReward:
    """`progress`: predicted steps remaining after the traced tactic minus after the completion."""

    __name__ = "progress"

    def __init__(self, scorer):
        self.scorer = scorer

    def __call__(self, prompts, completions, goals, prefix, tactic, **kwargs) -> list[float | None]:
        from tasks.progress.data import join_prefix

        texts = [completion_text(c) for c in completions]
        rows, refused = [], []
        for g, p, t, text in zip(goals, prefix, tactic, texts, strict=True):
            pre = join_prefix(json.loads(p))
            rows += [(g, pre, t), (g, pre, tactic_of(text))]
            refused.append(bool(refusal(text)) or not tactic_of(text))
        predicted = self.scorer.predict(rows)
        return [0.0 if bad else float(predicted[2 * i] - predicted[2 * i + 1]) for i, bad in enumerate(refused)]


class FormatReward:
    """`format`: 1 for a completion of the mode's shape, 0 otherwise (and for a refused one)."""

    __name__ = "format"

    def __init__(self, mode: str):
        self.mode = mode

    def __call__(self, prompts, completions, **kwargs) -> list[float]:
        return [format_score(completion_text(c), self.mode) for c in completions]


def format_score(text: str, mode: str) -> float:
    r"""1.0 when `text` has the mode's shape: one non-empty line (`tactic`), a tactic block
    with no code fence and no declaration (`proof`); 0.0 otherwise or when refused.

    >>> format_score("simp", "tactic"), format_score("intro n\nsimp", "tactic"), format_score("sorry", "tactic")
    (1.0, 0.0, 0.0)
    >>> format_score("intro n\nsimp", "proof"), format_score("theorem t : True := by trivial", "proof")
    (1.0, 0.0)
    """
    if refusal(text) or not text.strip():
        return 0.0
    if mode == "tactic":
        return 1.0 if len([ln for ln in text.strip().split("\n") if ln.strip()]) == 1 else 0.0
    if "```" in text or text.lstrip().startswith(("theorem", "lemma")):
        return 0.0
    return 1.0


class OverlongReward:
    """`overlong`: DAPO's soft overlong punishment from TRL, under Dojoflow's reward name."""

    __name__ = "overlong"

    def __init__(self, max_completion_length: int, buffer: int):
        from trl.rewards import get_soft_overlong_punishment

        self._punish = get_soft_overlong_punishment(max_completion_length, buffer)

    def __call__(self, prompts, completions, completion_ids, **kwargs) -> list[float]:
        return self._punish(completion_ids=completion_ids)


def build_reward_functions(
    names: Sequence[str], mode: str, rewarder: LeanRewarder | None, settings: RewardSettings, max_completion_length: int
) -> list:
    """The reward callables for `names`, in that order (their weights are GRPOConfig.reward_weights)."""
    funcs = []
    for name in names:
        if name == "lean_tactic":
            funcs.append(LeanTacticReward(rewarder))
        elif name == "lean_proof":
            funcs.append(LeanProofReward(rewarder))
        elif name == "progress":
            from tasks.progress.scorer import ProgressScorer

            funcs.append(ProgressReward(ProgressScorer.load(settings.progress_checkpoint)))
        elif name == "format":
            funcs.append(FormatReward(mode))
        elif name == "overlong":
            funcs.append(OverlongReward(max_completion_length, settings.overlong_buffer))
        else:
            raise ValueError(f"unknown reward {name!r}")
    return funcs
