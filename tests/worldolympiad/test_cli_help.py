"""Every subcommand of `worldolympiad`, `evaluate-model`, `inferix` and `reference-world-lab` — found through argparse,
dispatched packages included — ends its --help with runnable examples; the cheap ones run here."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from worldolympiad.cli import main as cli

REPO = Path(__file__).resolve().parents[2]

#: program → "module:callable" that builds its parser (a build_parser, or a main that parses argv)
PROGRAMS = {
    "worldolympiad": "worldolympiad.cli.main:build_parser",
    "evaluate-model": "worldolympiad.cli.evaluate:build_parser",
    "inferix": "inferix.cli:build_parser",
    "reference-world-lab": "reference_world_lab.cli:build_parser",
    "worldolympiad report": "leaderboard.report:main",
    "worldolympiad leaderboard": "leaderboard.cli:main",
    "worldolympiad lvbench": "tracks.longvideo.cli:build_parser",
    "worldolympiad scenarios render": "scenarios.render:main",
}

#: commands whose --help has no example yet, in packages another owner changes (strict: an example
#: added there makes this test fail until the entry is removed)
NO_EXAMPLE_YET = {
}

#: examples cheap enough to run in the test (no model, no video, no network): prefixes
CHEAP = ("worldolympiad ls ", "worldolympiad validate docs/examples/", "worldolympiad validate smoke")


class _ParserCapturedError(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _parser_of(target: str) -> argparse.ArgumentParser:
    """The parser a CLI builds: returned by build_parser, or caught when main() parses."""
    from worldolympiad.registry import import_target

    fn = import_target(target)
    if target.endswith(":build_parser"):
        return fn()  # type: ignore[no-any-return]

    def capture(self: argparse.ArgumentParser, *a: object, **k: object) -> None:
        raise _ParserCapturedError(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_args", capture)
        mp.setattr(argparse.ArgumentParser, "parse_known_args", capture)
        try:
            fn([])
        except _ParserCapturedError as c:
            return c.parser
    raise AssertionError(f"{target} did not parse a command line")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for name, sub in a.choices.items()}


def _commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(full command, parser) for every leaf command; dispatch stubs are replaced by their package's parser."""
    def walk(prefix: str, parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
        subs = _subcommands(parser)
        if not subs:
            yield prefix, parser
        for name, sub in subs.items():
            full = f"{prefix} {name}"
            if any(p == full or p.startswith(full + " ") for p in PROGRAMS):
                continue  # provided by another package: walked from PROGRAMS
            yield from walk(full, sub)

    for prog, target in PROGRAMS.items():
        yield from walk(prog, _parser_of(target))


COMMANDS = dict(_commands())


def _examples(help_text: str) -> list[str]:
    """Command lines listed under an ``example(s):`` heading."""
    out, inside = [], False
    for line in help_text.splitlines():
        if re.match(r"^examples?:\s*$", line):
            inside = True
            continue
        if inside and line.startswith("  ") and line.strip():
            out.append(line.strip())
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    return out


def test_every_dispatched_command_is_walked():
    top = _subcommands(_parser_of(PROGRAMS["worldolympiad"]))
    dispatched = {f"worldolympiad {c}" + (" render" if c == "scenarios" else "") for c in cli.DISPATCH}
    assert dispatched <= set(PROGRAMS)
    assert {"ls", "validate", "score", "import", "generate"} <= set(top)
    assert "worldolympiad import" in COMMANDS and "inferix generate" in COMMANDS
    assert set(NO_EXAMPLE_YET) <= set(COMMANDS), set(NO_EXAMPLE_YET) - set(COMMANDS)


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=f"no example yet in {NO_EXAMPLE_YET[c]}"))
    if c in NO_EXAMPLE_YET else c
    for c in COMMANDS
])
def test_help_has_an_example_of_the_command(command):
    examples = _examples(COMMANDS[command].format_help())
    assert any(e.startswith(command) for e in examples), (command, examples)


def test_cheap_examples_run(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    lines = sorted({e for p in COMMANDS.values() for e in _examples(p.format_help())
                    if e.startswith(CHEAP) and "--videos" not in e})
    assert len(lines) >= 6, lines
    for line in lines:
        argv = shlex.split(line, comments=True)[1:]
        assert cli.main(argv) == 0, (line, capsys.readouterr())
