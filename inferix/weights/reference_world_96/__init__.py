"""The reference world model bundle (see MODEL_CARD.md); data only."""
