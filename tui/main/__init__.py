"""The main screen of one profile and its tabs."""
