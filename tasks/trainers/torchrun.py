"""torchrun for a launched step: `<python> -m tasks.trainers.torchrun ARGS` is `<python> -m
torch.distributed.run ARGS` (torch's own `main`: the same arguments, workers, output and exit
code), except that once every worker has succeeded it ends without the interpreter's module
teardown (0.8 s of CPU over torch's objects per launch on the 2-core test box; tasks/quick_exit.py).
A failed worker ends it the usual way (torch's error report, exit code 1).

Runs in the training environment (`launch.python`), like the worker: imports no Prefect.
"""

from __future__ import annotations


def main() -> None:
    from torch.distributed.run import main as torch_main

    torch_main()  # reads sys.argv[1:], as `python -m torch.distributed.run` does


if __name__ == "__main__":
    from tasks.quick_exit import exit_now

    main()
    exit_now(0)
