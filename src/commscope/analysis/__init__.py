"""Analyses over stored records."""
