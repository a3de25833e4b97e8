"""Command-line entry points: ``evaluate-model`` (:mod:`.evaluate`) and ``worldolympiad`` (:mod:`.main`).

Both stay import-light at module level (no torch), so ``--help`` and ``ls`` are instant.
"""

from __future__ import annotations

import argparse
from typing import Any


def help_examples(*lines: str) -> dict[str, Any]:
    """``ArgumentParser`` / ``add_parser`` keywords that end a command's ``--help`` with runnable
    examples, one per line, under the ``examples:`` heading ``tests/worldolympiad/test_cli_help.py``
    reads."""
    return {"epilog": "examples:\n" + "\n".join(f"  {x}" for x in lines),
            "formatter_class": argparse.RawDescriptionHelpFormatter}
