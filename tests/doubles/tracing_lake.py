"""A double of `lake` for the tracing steps (tasks/tracing/steps.py): what Lake does with a
project's git dependencies, and a probe of the network, with no Lean.

- `lake --version` prints a version line shaped as the one tasks/tracing/toolchain.py parses
  (`Lake version X (Lean version Y)`, as the existing tracing tests' double printed it).
- `lake resolve-deps` and `lake build` materialize every package of lake-manifest.json that is
  missing from `.lake/packages/`: Lake clones a git dependency only when its folder does not
  exist, and otherwise only checks out the manifest's revision in it (Lake's Load/Materialize.lean
  `materializeGit`: `if ← dir.isDir then ... checkoutDetach hash dir else ... clone url dir`).
  `resolve-deps` stops there (CLI/Main.lean `lake.resolveDeps` only loads the workspace);
  `build` then builds (nothing, here).
- "Cloning" is a TCP connection to the address in the project's `.double-remote` file (the
  test's listener on 127.0.0.1 stands in for the package's git host), sending
  `clone NAME`; if it fails, the double exits 1 with an error line of its own wording (Lake
  stops when a clone fails; its message is not modelled). Without a
  `.double-remote` file a missing package is created with no network (a test that does not
  probe the network).
- `lake build`, as code of the repository that runs while it builds (a `run_io` in the
  lakefile, an `#eval` in a module), also tries to connect with `build probe` and prints
  whether it could; the build itself goes on either way.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

LAKE = r"""#!{python}
import json, socket, sys
from pathlib import Path

VERSION = {version!r}


def remote():
    path = Path(".double-remote")
    if not path.exists():
        return None
    host, port = path.read_text().split()
    return host, int(port)


def connect(address, payload):
    try:
        with socket.create_connection(address, timeout=10) as s:
            s.sendall(payload.encode())
        return None
    except OSError as e:
        return e


def materialize():
    manifest = Path("lake-manifest.json")
    packages = json.loads(manifest.read_text()).get("packages", []) if manifest.exists() else []
    for pkg in packages:
        name = pkg.get("name") or pkg.get("git", {{}}).get("name")
        folder = Path(".lake", "packages", name)
        if folder.is_dir():
            print(f"{{name}}: checking out revision {{pkg.get('rev')}}", flush=True)
            continue
        address = remote()
        if address is not None:
            error = connect(address, f"clone {{name}}")
            if error is not None:
                print(f"error: {{name}}: failed to clone: {{error}}", file=sys.stderr, flush=True)
                sys.exit(1)
        print(f"{{name}}: cloning {{pkg.get('url')}}", flush=True)
        folder.mkdir(parents=True)
        (folder / "lean-toolchain").write_text(Path("lean-toolchain").read_text())


args = sys.argv[1:]
if args[:1] == ["--version"]:
    print(f"Lake version 5.0.0-4e4e4e4 (Lean version {{VERSION}})")
elif args[:1] in (["resolve-deps"], ["build"]):
    materialize()
    if args[:1] == ["build"] and remote() is not None:
        error = connect(remote(), "build probe")
        print(f"double lake build: network probe: {{'connected' if error is None else f'failed: {{error}}'}}", flush=True)
else:
    print(f"Lake version 5.0.0-4e4e4e4 (Lean version {{VERSION}})")
"""


def write_lake(folder: Path, lean_version: str) -> Path:
    """Write the double as `folder/lake`, run by this Python (visible inside the sandbox)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "lake"
    path.write_text(LAKE.format(python=sys.executable, version=lean_version))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
