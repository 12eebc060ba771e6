"""`dojoflow sql`: a read-only query a user typed, run against the catalog with a time limit.

Only SELECT statements run (DuckDB classifies them, `statement_kinds`); the connection is
locked down as every catalog connection is (`catalog.lock_down`: the store's own files
only). A query that runs past `time_limit_s` is interrupted (`DuckDBPyConnection.interrupt`
from a timer thread) and named, so a runaway cross join cannot hold the catalog's reader
lock, and with it every writer, for good. DuckDB checks for an interrupt between chunks of
rows, so one huge scalar call (`repeat('x', 2000000000)`) does not see it: the query runs in
a thread of its own, and one still running `STUCK_GRACE_S` after the interrupt goes to the
caller's `on_stuck`, which ends the process (`dojoflow sql` prints the error and exits 2):
the thread cannot be stopped, its connection cannot be closed while it runs, and only the
process's end releases the catalog's lock.

    dojoflow sql "SELECT count(*) FROM theorems" --time-limit 10
"""

from __future__ import annotations

import os
import threading

from . import catalog
from .errors import InputError

DEFAULT_TIME_LIMIT_S = 60.0
MAX_TIME_LIMIT_S = 7 * 24 * 3600.0  # a week; Python's timers overflow near 1e9 s (threading.TIMEOUT_MAX)
STUCK_GRACE_S = 5.0  # $DOJOFLOW_SQL_STUCK_GRACE_S overrides it (a test's stuck query: 1 s)
SHOW_TABLES = '`dojoflow sql "SHOW TABLES"` lists the tables'


def statement_kinds(query: str) -> set[str]:
    """The kinds of the statements in `query` (SELECT, SET, DELETE, ...); unparseable is an InputError."""
    import duckdb

    try:
        return {s.type.name for s in duckdb.extract_statements(query)}
    except duckdb.Error as e:
        raise InputError("query", f"does not parse: {e}", "check the SQL") from e


def check_read_only(query: str) -> None:
    kinds = statement_kinds(query)
    if kinds - {"SELECT"}:
        raise InputError(
            "query",
            f"is a {', '.join(sorted(kinds - {'SELECT'}))} statement",
            "`dojoflow sql` runs read-only SELECT queries",
        )


def stuck_grace_s() -> float:
    """How long an interrupted query may still run before it counts as stuck: `STUCK_GRACE_S`,
    or $DOJOFLOW_SQL_STUCK_GRACE_S when that is a positive number."""
    try:
        grace = float(os.environ.get("DOJOFLOW_SQL_STUCK_GRACE_S", STUCK_GRACE_S))
    except ValueError:
        return STUCK_GRACE_S
    return grace if 0 < grace <= STUCK_GRACE_S * 100 else STUCK_GRACE_S


class QueryNotInterrupted(InputError):
    """The query ignored the interrupt: its thread still runs; end the process."""


def check_time_limit(time_limit_s: float) -> None:
    if not 0 < time_limit_s <= MAX_TIME_LIMIT_S:  # NaN fails both comparisons
        raise InputError(
            f"--time-limit {time_limit_s}",
            f"must be a positive number of seconds, at most {MAX_TIME_LIMIT_S:g} (a week)",
            "e.g. --time-limit 60",
        )


def run_query(store, query: str, time_limit_s: float = DEFAULT_TIME_LIMIT_S, on_stuck=None):
    """The result of a read-only `query` as a pyarrow Table; every refusal, failure and
    timeout is an InputError naming the query. `on_stuck(error)` (it should not return) is
    called with a QueryNotInterrupted when the query ignores the interrupt."""
    check_time_limit(time_limit_s)
    with catalog.connect(store) as con:
        outcome: dict = {}

        def work() -> None:
            try:
                outcome["table"] = con.sql(query).to_arrow_table()
            except BaseException as e:  # noqa: BLE001  (raised again in the caller's thread)
                outcome["error"] = e

        worker = threading.Thread(target=work, name="dojoflow-sql", daemon=True)
        worker.start()
        worker.join(time_limit_s)
        if worker.is_alive():
            con.interrupt()
            worker.join(stuck_grace_s())
            if worker.is_alive():
                stuck = QueryNotInterrupted(
                    "query",
                    f"ran longer than the time limit ({time_limit_s:g} s) inside one call that cannot be interrupted",
                    "narrow it (no huge repeat() or string built in one call)",
                )
                if on_stuck is not None:
                    on_stuck(stuck)
                raise stuck
        if "error" not in outcome:
            return outcome["table"]
        _raise_as_input_error(store, outcome["error"], time_limit_s)


def _raise_as_input_error(store, e: BaseException, time_limit_s: float):
    import duckdb

    if isinstance(e, duckdb.InterruptException):
        raise InputError(
            "query",
            f"ran longer than the time limit ({time_limit_s:g} s) and was interrupted",
            "narrow it (a WHERE clause, a LIMIT, no cross join), or raise --time-limit",
        ) from e
    if isinstance(e, duckdb.PermissionException):
        raise InputError(
            "query",
            str(e).splitlines()[0],
            f"`dojoflow sql` reads only the store's own files: query the views and tables ({SHOW_TABLES})",
        ) from e
    if isinstance(e, duckdb.Error):
        if catalog.damaged_file(store, e):
            raise e  # connect() names the damaged file and `dojoflow repair`
        raise InputError("query", str(e).splitlines()[0], f"check the SQL; {SHOW_TABLES}") from e
    raise e
