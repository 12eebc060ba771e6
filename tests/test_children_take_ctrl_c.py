"""The processes tests start take Ctrl-C, however the suite was started (tests/conftest.py)."""

import signal
import subprocess
import sys


def test_a_process_a_test_starts_does_not_ignore_sigint():
    """Started with `&` by a non-interactive shell, the suite inherits SIGINT ignored, and so would
    each process it starts: the tests that Ctrl-C a run or a supervisor would wait on a process that
    trains on. Run the suite that way (`bash -c 'python -m pytest THIS_FILE & wait'`) and this fails
    without conftest's handler."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
    ignored = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert ignored.strip() == "False"
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
