"""``python -m reference_world_lab``: the lab's command line (:mod:`reference_world_lab.cli`)."""

import sys

from reference_world_lab.cli import main

sys.exit(main())
