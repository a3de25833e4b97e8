"""Scenario families (gaming, robotics, real-world, mechanics, procedural, fly-throughs),
their reference generators, suites and the perturbation library.

Import-light on purpose: nothing here imports a simulator. Generators register through
:mod:`scenarios.registry` (looked up lazily by ``worldolympiad.registries.GENERATORS``),
suites are YAML fragments under ``scenarios/suites/<suite>/<family>.yaml`` built by
:mod:`scenarios.suites`, and :mod:`scenarios.render` writes a rendered suite folder.
"""

SUBPACKAGES: tuple[str, ...] = (
    "scenarios.gaming",
    "scenarios.robotics",
    "scenarios.realworld",
    "scenarios.mechanics",
    "scenarios.procedural",
    "scenarios.cartoon",
    "scenarios.flythrough",
    "scenarios.perturb",
)
