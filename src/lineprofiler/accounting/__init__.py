"""The always-on accounting layer: phases, counters, histograms, samples, worker files."""
