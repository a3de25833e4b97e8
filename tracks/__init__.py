"""tracks package."""
