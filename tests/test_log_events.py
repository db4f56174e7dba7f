"""docs/operations.md ("Logs") names every event the service logs at info level.

An operator filters and alerts on a JSON line's ``event``: an info line missing from the table is
one they meet first in production (under turn clocks, ``time-outs recorded`` was half of a
replica's lines, and not in the table; nor were ``shutting down`` and ``shut down``, the drain's
own lines). Warnings and errors are sentences the table covers as such ("a sentence").

The events are read from the code with ``ast`` (nothing imported or run): every call
``log.info("EVENT", …)`` in the packages that serve, ``log`` being a module's structlog logger.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "operations.md"
#: The source folders whose modules log while serving (gen/ is generated code, engine/ logs not).
PACKAGES = ("app", "log", "replays", "service")
#: The name every module gives its structlog logger.
LOGGER = "log"
#: A cell's event names: each in backticks.
NAME = re.compile(r"`([^`]+)`")


def info_events() -> dict[str, Path]:
    """Each event logged at info level, with a module that logs it."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "info"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == LOGGER
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    found.setdefault(node.args[0].value, module.relative_to(ROOT))
    return found


def documented_events() -> set[str]:
    """The events the "Logs" section's table names in its first column."""
    section = DOC.read_text(encoding="utf-8").split("### Logs", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return {name for row in rows for name in NAME.findall(row.split(" | ", 1)[0])}


def test_the_code_logs_info_events_and_the_table_is_found() -> None:
    """The reading works: the start's and the calls' lines are among those found and named."""
    assert {"serving", "rpc", "migrated"} <= set(info_events())
    assert {"serving", "rpc", "migrated"} <= documented_events()


def test_every_info_event_is_in_the_log_table() -> None:
    documented = documented_events()
    missing = {
        event: str(where) for event, where in info_events().items() if event not in documented
    }
    assert not missing, f"logged at info level, not in docs/operations.md's Logs table: {missing}"
