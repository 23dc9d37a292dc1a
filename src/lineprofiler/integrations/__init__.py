"""Integrations with the launchers and tools a run may live in: Ray, IPython."""
