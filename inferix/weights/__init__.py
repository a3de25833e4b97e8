"""Weights shipped inside the package (data only)."""
