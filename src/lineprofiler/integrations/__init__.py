"""Adapters to other people's runtimes (IPython). Each is imported only when used."""
