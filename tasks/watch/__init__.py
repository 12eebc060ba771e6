"""Watched repositories for nightly retraining: their newest commits, and what was processed.

One module per concern; flows/nightly.py calls one plain function per step:

- `config`: `WatchedRepo` and `NightlyConfig` (the flow's parameter, from YAML);
- `commits`: `latest_commit`, the newest commit of a watched branch (tasks/git.py runs git);
- `state`: `<DOJOFLOW_HOME>/nightly/state.json`, the last commit processed per repository;
- `plan`: `checked_from`, `changed_since` (what moved) and `pipeline_for` (the run over it);
- `outcome`: `retraining_outcome`, `raise_for_failures`, `night_result`;
- `report`: `night_name`, and `summary_markdown`, the report in every outcome.
"""

from .commits import GIT_TIMEOUT_S, latest_commit
from .config import NightlyConfig, WatchedRepo
from .outcome import (
    NightlyFailed,
    Retraining,
    RetrainingFailed,
    WatchCheckFailed,
    night_result,
    raise_for_failures,
    retraining_outcome,
)
from .plan import (
    Checked,
    changed_repositories,
    changed_since,
    checked_from,
    pipeline_for,
    sources_for,
    succeeded,
)
from .report import night_name, summary_markdown
from .state import (
    STATE_VERSION,
    NightlyState,
    Processed,
    load_state,
    record_processed,
    state_path,
)

__all__ = [
    "GIT_TIMEOUT_S",
    "STATE_VERSION",
    "Checked",
    "NightlyConfig",
    "NightlyFailed",
    "NightlyState",
    "Processed",
    "Retraining",
    "RetrainingFailed",
    "WatchCheckFailed",
    "WatchedRepo",
    "changed_repositories",
    "changed_since",
    "checked_from",
    "latest_commit",
    "load_state",
    "night_result",
    "pipeline_for",
    "raise_for_failures",
    "record_processed",
    "retraining_outcome",
    "sources_for",
    "state_path",
    "succeeded",
    "night_name",
    "summary_markdown",
]
