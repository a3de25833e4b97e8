"""Stage-5b weights of the reference world model (reference_world_96mw.yaml; session 5): the candidate
to replace the shipped default (gaming direction accuracy 0.326 vs 0.215, smoke level; see
reference_world/MODEL_CARD.md "Session 5"). Not the default; data only: ``inferix:<this folder>``."""
