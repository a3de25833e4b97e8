"""The project's registries and their built-in (lazy) entries.

``worldolympiad`` never imports ``tracks``, ``scenarios`` or ``leaderboard`` at module
level (DESIGN.md §2): it names them here as ``"module:attr"`` strings.

=============  ===========================================================  ==========================
registry       value                                                        spec syntax
=============  ===========================================================  ==========================
MODELS         factory ``(arg: str | None, **options) -> WorldModel``       ``prefix[:arg]``
TRACKS         :class:`worldolympiad.track.Track` subclass                  ``physics``
SUITES         ``() -> list[Case]``                                         ``smoke``
JUDGES         factory ``(arg: str | None, **options) -> Judge``            ``hf:PATH``
GENERATORS     :class:`~worldolympiad.scenario.CaseGenerator` instance     ``case.metadata["generator"]``
PERTURBATIONS  ``(video: Video, case: Case, strength: float, rng) -> Video`` ``perturbed:NAME@STRENGTH``
SEGMENTERS     factory ``(**options) -> Segmenter``                          ``opencv``
REPORTING      the leaderboard package's entry points (store, table, report) ``store``
COMMANDS       ``main(argv) -> int`` of a subcommand another package provides  ``worldolympiad NAME``
=============  ===========================================================  ==========================
"""

from __future__ import annotations

from typing import Any

from worldolympiad.registry import Registry

MODELS: Registry[Any] = Registry("models", plugin_target="worldolympiad.models.python_class:plugin_model")
TRACKS: Registry[Any] = Registry("tracks")
SUITES: Registry[Any] = Registry("suites")
JUDGES: Registry[Any] = Registry("judges")
# Filled by the scenarios package when first looked up (it registers its own entries).
GENERATORS: Registry[Any] = Registry("generators", providers=("scenarios.registry",))
PERTURBATIONS: Registry[Any] = Registry("perturbations", providers=("scenarios.registry",))
SEGMENTERS: Registry[Any] = Registry("segmenters")
# What evaluate-model calls to import its runs, print their leaderboard and write report.html.
REPORTING: Registry[Any] = Registry("reporting")
# `worldolympiad NAME ...` subcommands that other packages provide (argv is handed over whole).
COMMANDS: Registry[Any] = Registry("commands")

# ---------------------------------------------------------------- models
MODELS.register("videos", "worldolympiad.models.videos:VideosModel",
                description="pre-generated videos named by case id: videos:DIR (also the public WorldOlympiad layout)")
MODELS.register("reference", "worldolympiad.models.reference:ReferenceModel",
                description="the scenario's simulator ground truth")
MODELS.register("perturbed", "worldolympiad.models.reference:PerturbedModel",
                description="ground truth with a known defect: perturbed:NAME[@STRENGTH]")
MODELS.register("diffusers", "worldolympiad.models.diffusers:DiffusersModel",
                description="any local diffusers text/image-to-video pipeline: diffusers:PATH")
MODELS.register("inferix", "worldolympiad.models.inferix:InferixModel",
                description="any model the Inferix engine serves: inferix:NAME_OR_PATH")
MODELS.register("http", "worldolympiad.models.http_model:HttpModel",
                description="a model served over HTTP (docs/model_http.md): http:URL")
MODELS.register("py", "worldolympiad.models.python_class:PY",
                description="your own WorldModel subclass: py:package.module:Class or py:path/to/file.py:Class")
MODELS.register("repeat-first-frame", "worldolympiad.models.baselines:RepeatFirstFrameModel",
                description="baseline: the case's first frame held still for the whole video")

# ---------------------------------------------------------------- tracks
TRACKS.register("physics", "tracks.physics:PhysicsTrack",
                description="mechanics, thermal and material rules: segmentation + kinematic checks + MLLM judge")
TRACKS.register("geometry", "tracks.geometry:GeometryTrack",
                description="camera recovery, Gaussian-splat reconstruction, ATE/RPE, cross-view consistency")
TRACKS.register("interaction", "tracks.interaction:InteractionTrack",
                description="action following (direction and magnitude), chunk-transition smoothness, consistency")
TRACKS.register("longvideo", "tracks.longvideo:LongVideoTrack",
                description="LV-Bench Video Drift Error over quality signals")

# ---------------------------------------------------------------- judges
JUDGES.register("none", "worldolympiad.judges:NoJudge", description="no MLLM: model-free evidence only")
JUDGES.register("hf", "worldolympiad.judges.hf:HFJudge",
                description="local transformers vision-language model: hf:PATH")
JUDGES.register("openai", "worldolympiad.judges.openai:OpenAIJudge",
                description="OpenAI-compatible server: openai:BASE_URL#MODEL")

# ---------------------------------------------------------------- suites
for _name, _desc in [
    ("smoke", "one tiny case per family, <= 64 px, renders in seconds (CI)"),
    ("gaming", "Atari games and a first-person maze"),
    ("robotics", "a real arm model pushing, picking and placing"),
    ("realworld", "real clips and textured fly-throughs"),
    ("physics", "mechanics, thermal and material phenomena"),
    ("standard", "the benchmark: every family, 128-256 px, several seeds"),
]:
    SUITES.register(_name, f"scenarios.suites:{_name}_suite", description=_desc)

# ---------------------------------------------------------------- segmenters
SEGMENTERS.register("opencv", "tracks.physics.segmentation:OpenCVSegmenter",
                    description="model-free motion + colour segmentation (default)")
SEGMENTERS.register("sam", "tracks.physics.segmentation:SAMSegmenter",
                    description="segment-anything from a local checkpoint: sam:PATH")

# ---------------------------------------------------------------- reporting
REPORTING.register("store", "leaderboard.store:Store", description="SQLite store of imported runs")
REPORTING.register("leaderboard_table", "leaderboard.aggregate:leaderboard_table",
                   description="ranked table of runs (the one overall score, leaderboard/schema.yaml)")
REPORTING.register("schema", "leaderboard.schema:load_schema", description="the leaderboard schema")
REPORTING.register("report", "leaderboard.report:build_report", description="RUN_DIR/report.html")

# ---------------------------------------------------------------- commands (worldolympiad NAME ...)
COMMANDS.register("report", "leaderboard.report:main", description="static HTML report of a run",
                  provider="leaderboard")
COMMANDS.register("leaderboard", "leaderboard.cli:main", description="leaderboard store, table and site",
                  provider="leaderboard")
COMMANDS.register("scenarios", "scenarios.render:main", description="render a suite's cases and references",
                  provider="scenarios")
COMMANDS.register("lvbench", "tracks.longvideo.cli:main", description="LV-Bench drift evaluation",
                  provider="tracks (tracks/longvideo/cli.py)")
COMMANDS.register("import-lvbench", "tracks.longvideo.importer:import_lvbench",
                  description="import the LV-Bench layout (worldolympiad import --layout lvbench)",
                  provider="tracks (tracks/longvideo/importer.py)")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"prefix:arg"`` into ``("prefix", "arg")``; ``"prefix"`` gives ``("prefix", None)``."""
    spec = spec.strip()
    if not spec:
        raise ValueError("empty spec; expected e.g. 'videos:DIR', 'reference', 'perturbed:gravity_reversed@1.0'")
    if ":" in spec:
        prefix, arg = spec.split(":", 1)
        return prefix, arg
    return spec, None


def load_plugins_into_all() -> None:
    """Force entry-point discovery for every registry (used by ``worldolympiad ls``)."""
    for reg in (MODELS, TRACKS, SUITES, JUDGES, GENERATORS, PERTURBATIONS, SEGMENTERS, REPORTING, COMMANDS):
        reg.names()
