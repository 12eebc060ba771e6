"""Where the gold check runs: every proof the fast backend accepted goes through comparator
(tasks/lean/gold.py) before the verdict rule can call it proved, and the answer is remembered.

`open_verifier` (tasks/lean/verified.py) wraps every backend but `replay` in a `GoldBackend`:
- gold check active (`backend.gold.check` auto with comparator installed, or on): a whole proof the
  fast backend accepted and the verdict rule would call proved is replayed by comparator; the check
  carries the `GoldResult` (`ProofCheck.gold`), and `verdict.judge` gives `proved` at level
  `kernel_replayed` only when comparator accepted; a rejection is a rejection; a run that established
  nothing is an `error`. Rejected candidates (the large majority) never reach comparator.
- not active (off, or not installed under auto): checks pass through, and every proof is
  `proved` at level `elaborator_checked`.
The backend's name says which: `repl+kernel_replayed` or `repl+elaborator_checked`; proof rows,
found proofs, the card, the terminal and pass@k metrics (`repl+kernel_replayed_pass@1`) carry it.

Gold answers are cached in the verification cache (storage/verification_cache.py) under the
toolchain, the header's hash, the statement and the proof (backend `comparator`, rule
GOLD_RULE_VERSION), whichever fast backend accepted it: a proof is replayed once. Errors are not stored.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import threading
from pathlib import Path

from storage.errors import InputError, StoreLockedError
from storage.ids import stable_hash
from storage.verification_cache import CachedAnswer, CacheKey, sync

from .backend import LeanBackend, ProofCheck, TheoremSpec, WrappedBackend
from .config import BackendSettings
from .gold import (
    ELABORATOR_CHECKED,
    GOLD_RULE_VERSION,
    KERNEL_REPLAYED,
    GoldResult,
    comparator_config,
    gold_check,
    run_comparator,
)
from .registry import lake_path

log = logging.getLogger(__name__)

LSM_LIST = "/sys/kernel/security/lsm"
INSTALL = (
    "build leanprover/comparator and leanprover/lean4export for your Lean version (`lake build` in each) and put "
    "`comparator` and `lean4export` on PATH (or set backend.gold.comparator_path / lean4export_path), with "
    "landrun on a kernel with Landlock or bubblewrap (`apt-get install bubblewrap`); or set backend.gold.check: off"
)


def landlock_enabled() -> bool:
    try:
        return "landlock" in Path(LSM_LIST).read_text().split(",")
    except OSError:
        return False


def choose_sandbox(settings: BackendSettings) -> tuple[str, str | None]:
    """(landrun | bubblewrap, why not where neither can run). landrun only where the kernel has
    Landlock: comparator passes `--best-effort`, which runs the build unsandboxed without it."""
    gold = settings.gold
    landrun = shutil.which(gold.landrun_path)
    if gold.sandbox in ("auto", "landrun") and landrun and landlock_enabled():
        return "landrun", None
    if gold.sandbox == "landrun":
        why = "landrun is not installed" if not landrun else f"the kernel has no Landlock LSM ({LSM_LIST})"
        return "landrun", why
    if settings.sandbox.unsafe_no_sandbox:
        return "bubblewrap", None  # the launcher then runs unsandboxed, as the user opted out
    from .availability import bubblewrap_problem

    why = bubblewrap_problem(settings.sandbox.bwrap_path)
    return "bubblewrap", (f"landrun cannot run here and {why}" if why else None)


def gold_problem(settings: BackendSettings) -> str | None:
    """What is missing for the gold check, or None when it can run. Starts no Lean process."""
    gold = settings.gold
    for what, path in (("comparator", gold.comparator_path), ("lean4export", gold.lean4export_path)):
        if shutil.which(path) is None:
            return f"{what} is not installed (`{path}` not found)"
    if shutil.which(lake_path(settings)) is None:
        return f"lake is not installed (`{lake_path(settings)}` not found); comparator runs under `lake env`"
    if gold.nanoda and shutil.which("nanoda_bin") is None:
        return "backend.gold.nanoda is on and `nanoda_bin` is not on PATH"
    return choose_sandbox(settings)[1]


def check_gold(settings: BackendSettings) -> None:
    """The declared availability check: InputError when the gold check is `on` and cannot run."""
    if settings.gold.check == "on":
        why = gold_problem(settings)
        if why is not None:
            raise InputError("backend.gold", f"is on, and {why}", INSTALL)


def gold_active(settings: BackendSettings) -> bool:
    """Whether proofs are replayed by comparator under `settings` (check_gold raises for `on`)."""
    if settings.gold.check == "off":
        return False
    check_gold(settings)
    why = gold_problem(settings)
    if why is not None and why not in _WARNED:  # once per process and reason
        _WARNED.add(why)
        log.warning("gold check off: %s; every proof is named %s (fix: %s)", why, ELABORATOR_CHECKED, INSTALL)
    return why is None


_WARNED: set[str] = set()


class ComparatorRunner:
    """Runs comparator for one theorem and proof under `settings` (tasks/lean/gold.py)."""

    def __init__(self, settings: BackendSettings):
        from .environment import minimal_env, toolchain_paths
        from .gold_sandbox import EXTRA_READ_ENV, write_landrun_launcher

        gold = settings.gold
        self.settings = settings
        root = Path(settings.work_dir) if settings.work_dir else Path(tempfile.mkdtemp(prefix="dojoflow-gold-"))
        self.work_root = root / "gold"
        self.work_root.mkdir(parents=True, exist_ok=True)
        self.sandbox, _ = choose_sandbox(settings)
        env = minimal_env()
        tools = [shutil.which(p) for p in (gold.comparator_path, gold.lean4export_path, lake_path(settings))]
        if self.sandbox == "landrun":
            landrun = shutil.which(gold.landrun_path)
        else:
            bwrap = None if settings.sandbox.unsafe_no_sandbox else shutil.which(settings.sandbox.bwrap_path)
            read_only = [*toolchain_paths(lake_path(settings), env), *settings.sandbox.read_only_paths]
            read_only += [str(Path(t).resolve().parent) for t in tools if t]
            spec = {
                "bwrap": bwrap,
                "read_only": read_only,
                "work_root": str(self.work_root),
                "memory_limit_mb": settings.memory_limit_mb,
                "cpu_limit_s": settings.sandbox.cpu_limit_s,
            }
            landrun = str(write_landrun_launcher(spec, self.work_root / "bin"))
        self.env = {**env, "COMPARATOR_LANDRUN": landrun, "COMPARATOR_LEAN4EXPORT": tools[1] or gold.lean4export_path}
        self.read_env = EXTRA_READ_ENV
        self.argv = [lake_path(settings), "env", tools[0] or gold.comparator_path]

    def config(self, theorem: TheoremSpec) -> dict:
        return comparator_config(theorem, self.settings.allowed_axioms, self.settings.gold.nanoda)

    def run(self, folder: Path, config: Path, project: Path | None = None) -> GoldResult:
        env = dict(self.env)
        if project is not None:
            env[self.read_env] = str(project)
        return run_comparator([*self.argv, str(config)], folder, env, self.settings.gold.timeout_s, self.sandbox)


def gold_source(settings: BackendSettings, theorem: TheoremSpec) -> tuple[str, Path | None]:
    """(the header the theorem is elaborated under, the Lake project its imports come from), as
    the fast backend that accepted the proof sends it (tasks/lean/verified.py `header_text`)."""
    from .registry import get
    from .source import file_header, project_dir

    backend = get(settings.recheck or settings.kind)
    gold_project = Path(settings.gold.project) if settings.gold.project else None
    header = backend.fixed_header(settings)
    if header:
        return header, gold_project
    if not (theorem.url or theorem.file_path):
        return "", gold_project
    option, projects = backend.checkout_option(settings) or (f"backend.{backend.name}.projects", {})
    project = project_dir(theorem, projects, option)
    return file_header(theorem, project), project


class GoldGate:
    """Replays what the fast backend accepted (module docstring); `attach` is the one entry. Used by
    the verification cache's backend (tasks/lean/verified.py) and, without a cache, by GoldBackend."""

    def __init__(self, settings: BackendSettings, store, active: bool, runner=None):
        self.settings = settings
        self.store = store
        self.active = active
        self.level = KERNEL_REPLAYED if active else ELABORATOR_CHECKED
        self.runner = runner if runner is not None or not active else ComparatorRunner(settings)
        self.gold_stats = {"gold_runs": 0, "gold_hits": 0, "passed_through": 0}
        self._known: dict[str, dict] | None = None
        self._toolchains: dict[str, str] = {}
        self._lock = threading.Lock()

    def attach(self, theorem: TheoremSpec, proof: str, check: ProofCheck) -> ProofCheck:
        """`check` with comparator's answer attached, where the fast verdict is `proved`."""
        from .verdict import fast_judge

        if not self.active or fast_judge(check, proof, tuple(self.settings.allowed_axioms)).status != "proved":
            self.gold_stats["passed_through"] += 1
            return check
        return dataclasses.replace(check, gold=self._gold_result(theorem, proof))

    @property
    def gold_rule_version(self) -> str:
        """The gold rule, the allowed axioms and the kernels: what else comparator's answer depends on."""
        axioms = ",".join(sorted(self.settings.allowed_axioms))
        return f"{GOLD_RULE_VERSION}|axioms={axioms}|nanoda={self.settings.gold.nanoda}"

    def gold_key(self, theorem: TheoremSpec, header: str, proof: str) -> CacheKey:
        from .verified import normalise_proof

        if theorem.repo_id not in self._toolchains:  # one catalog read per repository
            toolchain = None
            if self.store is not None and theorem.repo_id:
                try:
                    toolchain = self.store.repository(theorem.repo_id).get("lean_version")
                except InputError:
                    toolchain = None
            self._toolchains[theorem.repo_id] = toolchain or f"unknown toolchain of {theorem.url}@{theorem.commit}"
        toolchain = self._toolchains[theorem.repo_id]
        return CacheKey(
            toolchain,
            stable_hash(header, 32),
            theorem.statement,
            normalise_proof(proof),
            self.gold_rule_version,
            "comparator",
        )

    def _gold_result(self, theorem: TheoremSpec, proof: str) -> GoldResult:
        try:
            header, project = gold_source(self.settings, theorem)
        except InputError as e:
            return GoldResult("error", "infrastructure", f"no header to replay the proof under: {e}")
        key = self.gold_key(theorem, header, proof)
        with self._lock:
            known = self._load().get(key.digest)
        if known is not None:
            self.gold_stats["gold_hits"] += 1
            return GoldResult(**{**known, "kernels": tuple(known.get("kernels", ()))})
        self.gold_stats["gold_runs"] += 1
        result = gold_check(_Bound(self.runner, project), theorem, proof, header, project)
        if result.status != "error":
            self._store(key, result)
        return result

    def _load(self) -> dict[str, dict]:
        if self._known is None:
            self._known = {}
            if self.store is not None and self.settings.verification_cache:
                try:
                    self._known, _ = sync(self.store, [], self.gold_rule_version, "comparator")
                except StoreLockedError as e:
                    log.warning("gold cache not read (%s)", e)
        return self._known

    def _store(self, key: CacheKey, result: GoldResult) -> None:
        data = dataclasses.asdict(result)
        with self._lock:
            self._load()[key.digest] = data
        if self.store is None or not self.settings.verification_cache:
            return
        answer = CachedAnswer("comparator", result.status, result.kernel_accepted, (result.reason,), (), data)
        try:
            sync(self.store, [(key, answer)], self.gold_rule_version, "comparator", since=None)
        except StoreLockedError as e:
            log.warning("gold answer not stored (%s); it stays in this process's memory", e)


class GoldBackend(WrappedBackend):
    """`backend` (without a verification cache) whose accepted proofs pass the gate."""

    _OWN = ("backend", "gate")

    def __init__(self, backend: LeanBackend, gate: GoldGate):
        self.backend = backend
        self.gate = gate

    @property
    def name(self) -> str:
        return f"{self.backend.name}+{self.gate.level}"

    def check_proof(self, theorem: TheoremSpec, proof: str) -> ProofCheck:
        return self.check_proofs([(theorem, proof)])[0]

    def check_proofs(self, items: list[tuple[TheoremSpec, str]]) -> list[ProofCheck]:
        from . import check_proofs

        checks = check_proofs(self.backend, items)
        return [self.gate.attach(theorem, proof, check) for (theorem, proof), check in zip(items, checks)]

    def _check_steps(self, theorem: TheoremSpec, tactics: tuple[str, ...]) -> ProofCheck:
        check = self.backend.check_steps(theorem, tuple(tactics))
        return self.gate.attach(theorem, "\n".join(tactics), check)


class _Bound:
    """A runner with this theorem's checkout made readable in the sandbox."""

    def __init__(self, runner, project):
        self.runner, self.project, self.work_root = runner, project, runner.work_root

    def config(self, theorem):
        return self.runner.config(theorem)

    def run(self, folder, config):
        return self.runner.run(folder, config, self.project)


def open_gold(backend: LeanBackend, settings: BackendSettings, store):
    """The declared opener: the gate on `backend`, active where comparator can run; a verification
    cache's backend takes it in (its name and checks then carry the level), any other is wrapped."""
    gate = GoldGate(settings, store, gold_active(settings))
    if hasattr(backend, "use_gold"):
        return backend.use_gold(gate)
    return GoldBackend(backend, gate)
