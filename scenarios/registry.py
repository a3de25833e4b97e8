"""Fill ``GENERATORS`` and ``PERTURBATIONS`` from every scenario subpackage.

``worldolympiad.registries.GENERATORS`` / ``PERTURBATIONS`` name this module as their
provider, so the first lookup imports it. Each subpackage's ``__init__`` exposes
``register(generators, perturbations)``; a subpackage that is missing (not written yet,
or its optional dependency absent) is logged and skipped so the others still load.
"""

from __future__ import annotations

import importlib
import logging

from scenarios import SUBPACKAGES
from worldolympiad.registries import GENERATORS, PERTURBATIONS
from worldolympiad.registry import Registry

logger = logging.getLogger(__name__)

#: subpackage → reason it could not be registered (for ``worldolympiad ls`` diagnostics).
UNAVAILABLE: dict[str, str] = {}


def register_all(generators: Registry, perturbations: Registry) -> list[str]:
    """Import every scenario subpackage and let it register its entries.

    Returns:
        the subpackages that registered successfully.
    """
    ok: list[str] = []
    for mod_name in SUBPACKAGES:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as e:
            UNAVAILABLE[mod_name] = f"{type(e).__name__}: {e}"
            logger.info("scenario subpackage %s not available: %s", mod_name, e)
            continue
        register = getattr(mod, "register", None)
        if register is None:
            UNAVAILABLE[mod_name] = "has no register(generators, perturbations) function"
            logger.info("scenario subpackage %s has no register(generators, perturbations) yet", mod_name)
            continue
        register(generators, perturbations)
        ok.append(mod_name)
    return ok


REGISTERED: list[str] = register_all(GENERATORS, PERTURBATIONS)
