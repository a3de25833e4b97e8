"""Stage-3 (96 px) weights of the reference world model, the default in sessions 3-5: init_from of
reference_world_96m.yaml and reference_world_96r.yaml; data only (``inferix:<this folder>``)."""
