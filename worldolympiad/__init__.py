"""WorldOlympiad: a benchmark for video world models.

Core contracts live here (types, registries, model and track interfaces, the
evaluator and CLI). Tracks, scenarios and the leaderboard are sibling packages found
through registries; this package never imports them at module level.
"""

__version__ = "0.1.0"
