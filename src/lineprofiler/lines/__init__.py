"""The line layer: a C tracer behind LineProfiler."""
