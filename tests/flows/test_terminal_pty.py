"""`dojoflow run`, `prove` and `grpo train` on a real pseudo-terminal, as a user sees them.

A piped run is not enough: rich's live display swaps `sys.stdout`/`sys.stderr` for proxies to
the terminal by default, so library output (tqdm bars, TRL's loss dictionaries, "Loading
weights", Prefect's INFO lines) reached the screen only when a terminal was attached, and the
log file got none of it. Each command here runs in a subprocess whose stdin, stdout and stderr
are a pty; the test reads the screen until the process exits (generous ceiling, no timing
assertions) and checks the screen holds Dojoflow's lines only and the log file the rest.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import yaml

from tests.doubles.openai_endpoint import EndpointDouble
from tests.doubles.sample_store import sample_store
from tests.flows.harness_server import as_if_dojoflow_server_started

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CEILING_S = 900  # only a hung command reaches this
NOISE = ("{'loss'", "{'train_runtime'", "Loading weights", "Writing model shards", "it/s]", "INFO", "Traceback")


def on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run `python -m flows.cli ARGS` with a 100x40 pty as its terminal; (exit code, screen text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "DOJOFLOW_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TERM="xterm-256color")
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + CEILING_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer has closed the pty
                    break
                if not chunk:
                    break
                screen += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    return proc.returncode, ANSI.sub("", screen.decode("utf-8", "replace"))


def assert_quiet(screen: str) -> Path:
    for noise in NOISE:
        assert noise not in screen, f"{noise!r} reached the terminal:\n{screen[-4000:]}"
    log = re.findall(r"^log: (\S+\.log)\s*$", screen.replace("\r", "\n"), re.M)
    assert log, screen[-4000:]
    return Path(log[-1])


def test_run_on_a_terminal_shows_only_dojoflows_lines_and_the_log_gets_the_libraries(tmp_path, prefect):
    cfg = {
        "name": "pty",
        "sources": [{"sample": "NatBasics"}],
        "max_steps": 1,
        "trainers": {
            "sft": {
                "model": "builtin:tiny-causal-lm",
                "training": {"max_steps": 1, "per_device_train_batch_size": 4, "logging_steps": 1, "save_steps": 1},
                "evaluation": {"top_k": 2, "max_new_tokens": 4, "max_eval_examples": 2},
            },
            "retriever": None,
            "progress": None,
        },
        "evaluation": {"splits": ["test"]},
    }
    (tmp_path / "pty.yaml").write_text(yaml.safe_dump(cfg))
    home = tmp_path / "home"
    ui = as_if_dojoflow_server_started(home)  # not about the server: the worker's one (a temporary one: piped only)
    code, screen = on_a_terminal(["run", str(tmp_path / "pty.yaml"), "--home", str(home)], ROOT)
    assert code == 0, screen[-4000:]
    assert f"Prefect server: {ui} (started by `dojoflow server start`)" in screen, screen[-4000:]
    assert "step 1/1 NatBasics · sft · train" in screen and "done: 1 steps" in screen
    log = assert_quiet(screen).read_text()
    assert "{'loss'" in log and "Loading weights" in log, log[-3000:]


def test_prove_and_grpo_train_on_a_terminal_print_their_result_and_log_the_rest(tmp_path, prefect):
    home = tmp_path / "home"
    sample_store(home)
    ui = as_if_dojoflow_server_started(home)  # prove and grpo train once ignored it, each starting a server
    reused = f"Prefect server: {ui} (started by `dojoflow server start`)"
    endpoint = EndpointDouble({})  # answers `rfl` to every state: the search runs, replay decides
    (tmp_path / "prove.yaml").write_text(
        yaml.safe_dump(
            {
                "proving": {
                    "backend": {"kind": "replay"},
                    "generator": {"kind": "endpoint", "endpoint": {"url": endpoint.url, "model": "double"}},
                    "num_tactics": 1,
                    "max_expansions": 2,
                }
            }
        )
    )
    with endpoint:
        code, screen = on_a_terminal(["prove", str(tmp_path / "prove.yaml"), "--home", str(home)], ROOT)
    assert code == 0, screen[-4000:]
    assert reused in screen and re.search(r"tried \d+ sorry theorems", screen), screen[-4000:]
    log = assert_quiet(screen).read_text()
    assert "Finished in state" in log, log[-3000:]

    theorems = tmp_path / "theorems.jsonl"
    theorems.write_text(
        json.dumps({"name": "one_mul'", "statement": "theorem one_mul' (n : Nat) : 1 * n = n", "imports": []}) + "\n"
    )
    args = ["grpo", "train", str(theorems), "-n", "2", "--max-steps", "1", "-o", str(tmp_path / "out")]
    code, screen = on_a_terminal([*args, "--home", str(home)], ROOT)
    assert code == 0, screen[-4000:]
    assert reused in screen and "done" in screen and "mean reward" in screen, screen[-4000:]
    log = assert_quiet(screen).read_text()
    assert "'loss'" in log, log[-3000:]
