#!/usr/bin/env bash
# A separate virtual environment with LeanDojo-v2 1.0.9's own code, for
# benchmarks/bench_vs_leandojo_v2.py (never the project's venv: its dependencies would
# pull torch, deepspeed and ray).
#
#     bash benchmarks/leandojo_v2_env.sh [VENV]     # default: benchmarks/.venv-leandojo-v2
#
# What is installed, and why:
#   lean-dojo-v2==1.0.9 --no-deps       the package under test
#   numpy loguru python-dotenv tqdm     imported and used by lean_dojo_v2.database
#   toml gitpython PyGithub requests    imported at module level by lean_dojo_v2.lean_dojo
#   networkx lxml filelock              (which the database models need for `Pos`) and by
#                                       lean_dojo_v2.utils.git; small, installed for real
# What is stubbed (an empty module in the venv's site-packages, see STUBS below):
#   deepspeed.utils.zero_to_fp32, pytorch_lightning.strategies.deepspeed
#       imported at module level by lean_dojo_v2.utils.common and never called on the
#       database path; the real packages pull torch (GBs). A call into them raises.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${1:-$HERE/.venv-leandojo-v2}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "lean-dojo-v2==1.0.9" --no-deps
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  numpy loguru python-dotenv tqdm toml gitpython PyGithub requests networkx lxml filelock
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
stub() {  # stub MODULE.PATH NAME...: an importable module whose NAMEs raise when used
  local mod="$1"; shift
  local dir="$SITE/$(echo "$mod" | tr . /)"
  mkdir -p "$dir"
  local parts="" p
  for p in $(echo "$mod" | tr . ' '); do
    parts="$parts/$p"
    [ -f "$SITE$parts/__init__.py" ] || : > "$SITE$parts/__init__.py"
  done
  {
    echo '"""Stub written by benchmarks/leandojo_v2_env.sh: imported by LeanDojo-v2 at module level, unused by its database."""'
    for name in "$@"; do
      echo "def $name(*a, **k):"
      echo "    raise RuntimeError('$mod.$name is a benchmark stub (benchmarks/leandojo_v2_env.sh)')"
    done
  } > "$dir/__init__.py"
}
# Stubs: see the header. (STUBS)
stub deepspeed.utils.zero_to_fp32 convert_zero_checkpoint_to_fp32_state_dict
stub pytorch_lightning.strategies.deepspeed DeepSpeedStrategy
# LeanDojo-v2 requires GITHUB_ACCESS_TOKEN to be set at import, and calls the GitHub API
# at import when it is non-empty: set, empty, it makes no network call.
GITHUB_ACCESS_TOKEN= "$VENV/bin/python" -c \
  'from lean_dojo_v2.database import DynamicDatabase; from lean_dojo_v2.database.models import Repository; print("lean_dojo_v2 database imports")'
echo "$VENV"
