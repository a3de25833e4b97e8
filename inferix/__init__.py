"""inferix package."""
