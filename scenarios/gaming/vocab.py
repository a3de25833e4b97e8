"""The gaming family's action vocabularies (``games.yaml``), loaded once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

GAMES_YAML = Path(__file__).resolve().parent / "games.yaml"


@lru_cache(maxsize=1)
def load_games() -> dict[str, Any]:
    """The parsed ``games.yaml`` (``{"atari": {game: spec}, "maze": spec}``)."""
    import yaml

    return yaml.safe_load(GAMES_YAML.read_text())  # type: ignore[no-any-return]


def atari_spec(game: str) -> dict[str, Any]:
    """Spec of one Atari game; raises naming the supported games."""
    games = load_games()["atari"]
    if game not in games:
        raise ValueError(f"unsupported Atari game {game!r}; supported: {', '.join(sorted(games))} (see {GAMES_YAML})")
    return games[game]  # type: ignore[no-any-return]


def maze_spec() -> dict[str, Any]:
    return load_games()["maze"]  # type: ignore[no-any-return]
