"""The story of a traced run: its exact spans and links read into per-worker summaries
(:mod:`.spans`), the hosts' clocks put on one timeline (:mod:`.clocks`), the chain of spans and
links that set the run's length (:mod:`.critical_path`), the late ranks at collective phases
(:mod:`.skew`) and the findings ranked by what they cost the run (:mod:`.findings`);
:func:`.assemble.story` assembles the :class:`.model.Story`. It reads run files only.
"""
