"""Tracing: a Lean 4 repository (url or local path, at a commit) -> a LeanDojo Benchmark export.

- `toolchain.find_toolchain()`: lake, lean, git and lean-dojo, with versions, or a clear error.
- `trace.trace_repository(url_or_path, commit, out_dir, work_dir)`: validate, check out, run
  lean-dojo in a subprocess (`worker.py`), write the export folder atomically.
- `convert.build_export(traced_repo, ...)` / `convert.write_export(export, folder)`: lean-dojo's
  traced objects -> LeanDojo export records (pure, duck-typed), then one atomic folder write.

The store imports the folder through its normal LeanDojo import path; metadata.json says
`"dojoflow_splits": "unassigned"` so that it assigns splits itself. Nothing here imports
lean-dojo at module level (it is an optional extra: `pip install -e '.[lean]'`).
"""

from ..lean.environment import minimal_env
from .convert import LeanDojoExport, build_export, write_export
from .errors import LeanDojoMissingError, ToolchainError, TracingError
from .toolchain import Program, Toolchain, find_toolchain
from .trace import trace_repository

__all__ = [
    "LeanDojoExport",
    "LeanDojoMissingError",
    "Program",
    "Toolchain",
    "ToolchainError",
    "TracingError",
    "build_export",
    "find_toolchain",
    "minimal_env",
    "trace_repository",
    "write_export",
]
