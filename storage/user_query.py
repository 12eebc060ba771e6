"""`dojoflow sql`: a read-only query a user typed, run against the catalog with a time limit.

Only SELECT statements run (DuckDB classifies them, `statement_kinds`); the connection is
locked down as every catalog connection is (`catalog.lock_down`: the store's own files
only). A query that runs past `time_limit_s` is interrupted (`DuckDBPyConnection.interrupt`
from a timer thread) and named, so a runaway cross join cannot hold the catalog's reader
lock, and with it every writer, for good.

    dojoflow sql "SELECT count(*) FROM theorems" --time-limit 10
"""

from __future__ import annotations

import threading

from . import catalog
from .errors import InputError

DEFAULT_TIME_LIMIT_S = 60.0
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


def check_time_limit(time_limit_s: float) -> None:
    if not time_limit_s > 0 or time_limit_s == float("inf"):
        raise InputError(f"--time-limit {time_limit_s}", "must be a positive number of seconds", "e.g. --time-limit 60")


def run_query(store, query: str, time_limit_s: float = DEFAULT_TIME_LIMIT_S):
    """The result of a read-only `query` as a pyarrow Table; every refusal, failure and
    timeout is an InputError naming the query."""
    import duckdb

    with catalog.connect(store) as con:
        timer = threading.Timer(time_limit_s, con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            return con.sql(query).to_arrow_table()
        except duckdb.InterruptException as e:
            raise InputError(
                "query",
                f"ran longer than the time limit ({time_limit_s:g} s) and was interrupted",
                "narrow it (a WHERE clause, a LIMIT, no cross join), or raise --time-limit",
            ) from e
        except duckdb.PermissionException as e:
            raise InputError(
                "query",
                str(e).splitlines()[0],
                f"`dojoflow sql` reads only the store's own files: query the views and tables ({SHOW_TABLES})",
            ) from e
        except duckdb.Error as e:
            if catalog.damaged_file(store, e):
                raise  # connect() names the damaged file and `dojoflow repair`
            raise InputError("query", str(e).splitlines()[0], f"check the SQL; {SHOW_TABLES}") from e
        finally:
            timer.cancel()
