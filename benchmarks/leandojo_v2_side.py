"""LeanDojo-v2's side of bench_vs_leandojo_v2.py: runs in LeanDojo-v2's own venv
(benchmarks/leandojo_v2_env.sh), imports nothing of Dojoflow's, prints one JSON line.

    ingest K EXPORTS OUT   build LeanDojo-v2 `Repository` objects of repo1..repoK from their
                           exports (`Repository.from_dict` with theorems_folder etc., what
                           LeanDojo-v2 does with a traced dataset), then time
                           `DynamicDatabase.export_merged_data(repos, OUT)`
    ingest-only K EXPORTS  the same ingest, timed in wall and CPU seconds, and no export
    load EXPORT            load a (Dojoflow) export with LeanDojo-v2's `Repository.from_dict`
"""

import datetime
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.database.models import Repository
from loguru import logger

logger.remove()  # its INFO lines would be timed as part of the export


def load_repository(export: Path, date: datetime.datetime) -> Repository:
    meta = json.loads((export / "metadata.json").read_text())
    url, commit = meta["from_repo"]["url"], meta["from_repo"]["commit"]
    return Repository.from_dict(
        {
            "url": url,
            "name": url.rstrip("/").split("/")[-1],
            "commit": commit,
            "lean_version": "v4.20.0",
            "lean_dojo_version": meta.get("leandojo_version", "4.20.0"),
            "metadata": {"date_processed": date},
            "theorems_folder": str(export / "random"),
            "premise_files_corpus": str(export / "corpus.jsonl"),
            "files_traced": str(export / "traced_files.jsonl"),
        }
    )


def main() -> None:
    op = sys.argv[1]
    if op == "load":
        repo = load_repository(Path(sys.argv[2]), datetime.datetime(2026, 1, 1))
        print(json.dumps({"theorems": repo.total_theorems, "premise_files": repo.num_premise_files}))
        return
    k, exports = int(sys.argv[2]), Path(sys.argv[3])
    ingest = []
    repos = []
    cpu = time.process_time()
    for i in range(1, k + 1):
        t = time.perf_counter()
        repos.append(load_repository(exports / f"repo{i}", datetime.datetime(2026, 1, 1) + datetime.timedelta(days=i)))
        ingest.append(time.perf_counter() - t)
    if op == "ingest-only":
        print(
            json.dumps(
                {
                    "wall_s": sum(ingest),
                    "op_cpu_s": time.process_time() - cpu,
                    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                }
            )
        )
        return
    out = Path(sys.argv[4])
    with tempfile.TemporaryDirectory() as tmp:
        db = DynamicDatabase(json_path=str(Path(tmp) / "dynamic_database.json"))
        t = time.perf_counter()
        db.export_merged_data(repos, out)
        export_s = time.perf_counter() - t
    print(
        json.dumps(
            {
                "ingest_s": ingest,
                "export_s": export_s,
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
