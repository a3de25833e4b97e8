"""Stage-5b (96 px, 0.55 M parameters) weights of the reference world model, the CPU-trained default
in sessions 6-8 (reference_world_96mw.yaml); data only (``inferix:<this folder>``)."""
