"""Adapters to other people's runtimes: Ray and IPython. Each is imported only when used."""
