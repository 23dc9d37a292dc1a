"""The report's second floor: from a read run to the report's model (:mod:`.build` runs the
blocks of :mod:`.blocks`; :mod:`.story` analyses a traced run). No text is printed here."""
