"""Importers of public data layouts into suite files (``worldolympiad import``).

* ``worldolympiad-damo`` — :func:`worldolympiad.importers.damo.import_damo` (REFERENCE.md §A).
* ``lvbench`` — provided by the long-video track (``tracks.longvideo.importer:import_lvbench``).
"""
