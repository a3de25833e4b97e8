"""Stage-2 (64 px) weights of the reference world model: init_from of reference_world_96.yaml; data only."""
