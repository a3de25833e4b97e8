"""Command-line entry points: ``evaluate-model`` (:mod:`.evaluate`) and ``worldolympiad`` (:mod:`.main`).

Both stay import-light at module level (no torch), so ``--help`` and ``ls`` are instant.
"""
