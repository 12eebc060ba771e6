"""Dojoflow's side of `bench_vs_leandojo_v2.py --last-step-only` at step 10, alone (its own child
operations, the same data: storage/synthetic.py, seeds 1..10), for re-measuring Dojoflow after a
change without re-running LeanDojo-v2's export (20 minutes on a loaded machine). Compare with the
LeanDojo-v2 figures of a run of that script in the same session (benchmarks/README.md, issue 24).

    nice -n 10 .venv/bin/python benchmarks/bench_vs_leandojo_v2_step10.py /tmp/vsd-work > out.json
"""

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_leandojo_v2 as b  # noqa: E402

from storage.synthetic import write_synthetic_export  # noqa: E402


def main() -> None:
    work = Path(sys.argv[1])
    shutil.rmtree(work, ignore_errors=True)
    for k in range(1, 11):
        write_synthetic_export(work / "exports" / f"repo{k}", f"repo{k}", 2000, 4, seed=k)
    out = {}
    for k in range(1, 10):  # the stores as step 10 finds them, nothing timed
        b.dojoflow("import", work, k)
        b.dojoflow("step-import", work, k)
    out["import_10"] = b.dojoflow("import", work, 10)
    out["snapshot_10"] = b.dojoflow("snapshot", work, 10)
    out["export_10"] = [b.dojoflow("export", work, 10) for _ in range(3)]
    out["step_10"] = b.dojoflow("step", work, 10)
    out["import_all"] = [b.dojoflow("import-all", work, 10) for _ in range(2)]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
