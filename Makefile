# WorldOlympiad + Inferix — every target sets up what it needs (idempotent).
#   make demo    set up, then evaluate the embedded default model on the smoke suite
#   make test    set up, then run the test suite (not gpu/slow)
#   make lint    ruff + mypy
#   make bench   a tour of the benchmarks in bench/ at quick sizes (print ratios; never fail on timing)

PYTHON ?= python3
PIP := $(PYTHON) -m pip
# A matched pair that lies on local disk on the project's machines (REFERENCE.md §E).
TORCH_PINS := torch==2.14.1 torchvision==0.29.1
PYIQA := pyiqa==0.1.16
APT_PACKAGES := libosmesa6 libegl1 libgl1 libgl1-mesa-dri libglib2.0-0 chromium
STAMP := .setup.stamp

.PHONY: setup system-deps demo test test-all lint bench lvbench-ci clean

system-deps:
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = "0" ]; then \
		missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
		if [ -n "$$missing" ]; then echo "apt-get install$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi; \
	else echo "skipping apt packages (not root or no apt-get): need $(APT_PACKAGES)"; fi

$(STAMP): pyproject.toml Makefile
	$(MAKE) system-deps
	$(PIP) install -q $(TORCH_PINS)
	$(PIP) install -q -e ".[all,test]"
	# MUSIQ's architecture for the LV-Bench clarity signal (docs/tracks/longvideo.md). --no-deps: pyiqa
	# declares datasets, bitsandbytes, tensorboard, facexlib... that its architecture modules never import.
	$(PIP) install -q --no-deps $(PYIQA)
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	MUJOCO_GL=$${MUJOCO_GL:-egl} evaluate-model

test: setup
	MUJOCO_GL=$${MUJOCO_GL:-egl} $(PYTHON) -m pytest -q --durations=30

test-all: setup
	MUJOCO_GL=$${MUJOCO_GL:-egl} $(PYTHON) -m pytest -q -m ""

lint: setup
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

# A tour of bench/ at quick sizes (14 min on 2 cores, session 16); each script's --help has the full runs.
BENCH := MUJOCO_GL=$${MUJOCO_GL:-egl} OMP_NUM_THREADS=1 $(PYTHON)
bench: setup
	$(BENCH) bench/bench_inferix.py --quick
	$(BENCH) bench/bench_evaluator.py
	$(BENCH) bench/bench_ray.py
	$(BENCH) bench/bench_smoke_render.py
	$(BENCH) bench/bench_scenarios_a.py
	$(BENCH) bench/bench_physics.py --no-speed
	$(BENCH) bench/bench_physics_coverage.py --suite smoke
	$(BENCH) bench/bench_geometry.py validity
	$(BENCH) bench/bench_interaction.py --quick
	$(BENCH) reference_world_lab/bench/bench_reference_world.py --suite-dir runs/bench/gaming --limit 4 --models trained,repeat-first-frame --skip-fps
	$(BENCH) -m worldolympiad scenarios render smoke runs/bench/smoke
	$(BENCH) reference_world_lab/bench/bench_teacher_forced.py runs/bench/smoke

# One thread: OpenMP threads spinning against each other made this 8x slower on a loaded 2-core box.
lvbench-ci: setup
	OMP_NUM_THREADS=1 MUJOCO_GL=$${MUJOCO_GL:-egl} $(PYTHON) -m worldolympiad.cli.main lvbench --ci --out runs/lvbench-ci

clean:
	rm -rf $(STAMP) runs .pytest_cache
