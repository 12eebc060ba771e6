"""Remember checks that passed, so a rerun does not import TRL, transformers and torch to
check the same settings again (seconds of a cached rerun, docs/terminal-and-server.md).

A check of pass-through training arguments imports the library class it checks against.
`remembered_when_valid` wraps such a check: a call whose arguments, library versions and
checking code, and this machine's GPUs, equal those of a call that passed returns that call's result without running
it. Failures are never remembered (the error is raised again, with its message). The memo is
a JSON file under the Dojoflow home (`<home>/cache/valid-training-args.json`: the home given
to `memo_under`, else $DOJOFLOW_HOME), so runs on other homes, and other users, share
nothing; only a check made with no home at all (a library call) uses the user's cache folder
(`$XDG_CACHE_HOME/dojoflow/`, default `~/.cache`). Safe to delete; arguments that are not
plain JSON are always checked.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from storage import atomic

LIBRARIES = ("trl", "transformers", "torch", "peft", "accelerate", "pytorch-lightning")


_HOME: ContextVar[Path | None] = ContextVar("dojoflow_memo_home", default=None)


@contextmanager
def memo_under(home) -> Iterator[None]:
    """Checks inside remember under `home` (a run's Dojoflow home)."""
    token = _HOME.set(Path(home) if home else None)
    try:
        yield
    finally:
        _HOME.reset(token)


def memo_path() -> Path:
    home = _HOME.get() or os.environ.get("DOJOFLOW_HOME")
    if home:
        return Path(home) / "cache" / "valid-training-args.json"
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


def _machine() -> dict:
    """What a check of mixed precision or devices depends on, without importing torch."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return {
        "host": platform.node(),
        "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpus": sorted(p.name for p in gpus.iterdir()) if gpus.is_dir() else [],
    }


def _jsonable(value):
    """Settings models as their JSON dump; anything else as it is (json.dumps decides)."""
    if hasattr(value, "model_dump"):
        return {"model": type(value).__qualname__, "fields": value.model_dump(mode="json")}
    return value


def _code_hash() -> str:
    """Dojoflow's checking code as it is now: every module under tasks/ (names, sizes, times)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]


def _load() -> dict:
    try:
        return json.loads(memo_path().read_text())
    except (OSError, ValueError):
        return {}


def remembered_when_valid(fn):
    @functools.wraps(fn)
    def check(*args, **kwargs):
        try:
            key = hashlib.sha256(
                json.dumps(
                    {
                        "fn": f"{fn.__module__}.{fn.__qualname__}",
                        "args": [_jsonable(a) for a in args],
                        "kwargs": {k: _jsonable(v) for k, v in kwargs.items()},
                        "versions": _versions(),
                        "machine": _machine(),
                        "code": _code_hash(),
                    },
                    sort_keys=True,
                ).encode()
            ).hexdigest()
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
