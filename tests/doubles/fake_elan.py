"""A fake elan: the toolchain manager's proxy behaviour, with fake toolchains whose `lake`
runs `lake env PROGRAM` like Lake does. Only what Dojoflow's launch path depends on:

- dispatch on the file name of argv[0]: `lake`/`lean` are proxies, `elan` is elan itself
  (elan src/elan-cli/main.rs; proxy_mode.rs `arg0.file_name()`), so a symlink
  `lake -> elan` (Debian's elan package: /usr/bin/lake -> elan) is a proxy for lake;
- the toolchain: `+NAME` as the first argument, else $ELAN_TOOLCHAIN, else the first
  `lean-toolchain` found walking up from the *current directory*, else the default of
  $ELAN_HOME/settings.toml, else the error "no default toolchain configured"
  (src/elan/config.rs `find_override` / `find_override_from_dir_walk(current_dir)`,
  proxy_mode.rs `create_command_for_dir(&utils::current_dir()?, arg0)`);
- a toolchain `leanprover/lean4:v4.20.0` lives in $ELAN_HOME/toolchains/leanprover--lean4---v4.20.0
  (elan's directory naming: `/` -> `--`, `:` -> `---`).

The fake toolchain's `lake env PROGRAM ...` runs PROGRAM with LEAN_SYSROOT set to the
toolchain's folder (as `lake env` does), ignoring `-d DIR`; `lake --version` answers.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

TOOLCHAIN_LAKE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Lake version 5.0.0-fake (Lean version {version})"; exit 0; fi
{broken}
if [ "$1" = "-d" ]; then shift 2; fi
if [ "$1" = "env" ]; then shift; LEAN_SYSROOT={sysroot}; export LEAN_SYSROOT; exec "$@"; fi
exit 0
"""
# What a toolchain other than the project's does: its Lean cannot read the project's
# .olean files (Lean's message for an olean of another version).
BROKEN = "echo \"error: failed to read file '.lake/build/lib/lean/NatBasics.olean', invalid header\" >&2; exit 1"


def toolchain_dir(name: str) -> str:
    return name.replace("/", "--").replace(":", "---")


def make_elan(home: Path, project_toolchain: str, default: str | None = None) -> Path:
    """An elan home with `bin/elan` and `bin/lake -> elan`, the project's toolchain, and a
    `default` one that fails like a toolchain of another Lean version. Returns bin/lake."""
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    elan = bin_dir / "elan"
    elan.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I {shlex.quote(__file__)} "$0" "$@"\n')
    elan.chmod(elan.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (bin_dir / "lake").symlink_to("elan")
    toolchains = {project_toolchain: "", **({default: BROKEN} if default else {})}
    for name, broken in toolchains.items():
        folder = home / "toolchains" / toolchain_dir(name)
        lake = folder / "bin" / "lake"
        lake.parent.mkdir(parents=True, exist_ok=True)
        version = name.rsplit(":v", 1)[-1]
        lake.write_text(TOOLCHAIN_LAKE.format(version=version, sysroot=shlex.quote(str(folder)), broken=broken))
        lake.chmod(lake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    if default:
        (home / "settings.toml").write_text(f'default_toolchain = "{default}"\n')
    return bin_dir / "lake"


def _override(cwd: Path) -> str | None:
    for folder in (cwd, *cwd.parents):
        try:
            first = (folder / "lean-toolchain").read_text().splitlines()
        except OSError:
            continue
        if first and first[0].strip():
            return first[0].strip()
    return None


def main(argv: list[str]) -> int:
    arg0, args = Path(argv[0]).name, argv[1:]
    if arg0 == "elan":
        print(f"error: elan: unrecognized subcommand {args[:1]}", file=sys.stderr)
        return 1
    home = Path(os.environ.get("ELAN_HOME") or Path(os.environ["HOME"]) / ".elan")
    if args[:1] and args[0].startswith("+"):
        name, args = args[0][1:], args[1:]
    else:
        name = os.environ.get("ELAN_TOOLCHAIN") or _override(Path(os.getcwd()).resolve())
    if name is None:
        settings = home / "settings.toml"
        text = settings.read_text() if settings.exists() else ""
        name = text.split('"')[1] if "default_toolchain" in text else None
    if name is None:
        print("error: no default toolchain configured", file=sys.stderr)
        return 1
    program = home / "toolchains" / toolchain_dir(name) / "bin" / arg0
    if not program.exists():
        print(f"error: toolchain '{name}' is not installed", file=sys.stderr)
        return 1
    os.execv(str(program), [str(program), *args])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
