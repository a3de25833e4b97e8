"""Stage-1 (32 px) weights of the reference world model: init_from of reference_world_64.yaml; data only."""
