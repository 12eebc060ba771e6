"""Remember checks that passed, so a rerun does not import TRL, transformers and torch to
check the same settings again (seconds of a cached rerun, docs/terminal-and-server.md).

A check of pass-through training arguments imports the library class it checks against.
`remembered_when_valid` wraps such a check: a call whose arguments, library versions and
checking code equal those of a call that passed returns that call's result without running
it. Failures are never remembered (the error is raised again, with its message). The memo is
a JSON file in the user's cache folder (`$XDG_CACHE_HOME/dojoflow/`, default `~/.cache`),
safe to delete; arguments that are not plain JSON are always checked.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from storage import atomic

LIBRARIES = ("trl", "transformers", "torch", "peft", "accelerate", "pytorch-lightning")


def memo_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dojoflow" / "valid-training-args.json"


def _versions() -> dict[str, str | None]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _code_hash(fn) -> str:
    try:
        return hashlib.sha256(Path(inspect.getsourcefile(fn)).read_bytes()).hexdigest()[:16]
    except (OSError, TypeError):
        return "unknown"


def _load() -> dict:
    try:
        return json.loads(memo_path().read_text())
    except (OSError, ValueError):
        return {}


def remembered_when_valid(fn):
    @functools.wraps(fn)
    def check(*args, **kwargs):
        try:
            key = hashlib.sha256(json.dumps(
                {"fn": f"{fn.__module__}.{fn.__qualname__}", "args": args, "kwargs": kwargs,
                 "versions": _versions(), "code": _code_hash(fn)}, sort_keys=True).encode()).hexdigest()
        except (TypeError, ValueError):
            return fn(*args, **kwargs)
        memo = _load()
        if key in memo:
            return copy.deepcopy(memo[key])
        result = fn(*args, **kwargs)
        try:
            memo[key] = json.loads(json.dumps(result))
        except (TypeError, ValueError):
            return result
        try:
            atomic.write_text(memo_path(), json.dumps(memo, sort_keys=True))
        except OSError:
            pass  # a read-only home: checks are just not remembered
        return result

    return check
