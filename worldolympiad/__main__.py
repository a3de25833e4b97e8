"""``python -m worldolympiad ...`` is the ``worldolympiad`` command (e.g. without the console script on PATH)."""

import sys

from worldolympiad.cli.main import main

sys.exit(main())
