"""Earlier stages of the reference world model (``init_from`` of later recipes in ``configs/``); data only."""
