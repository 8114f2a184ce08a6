"""The shared vocabulary at the bottom of protobench: every package above may import it.

Units and their parsers (:mod:`.units`), the pydantic field types built on them
(:mod:`.fields`), the threshold grammar (:mod:`.thresholds`), the error taxonomy
(:mod:`.errors`), the exit codes and the one exception tree whose errors carry
them (:mod:`.exceptions`), the recorder interface a protocol plugin writes to
(:mod:`.recorder`), the counter names shared by plugins and the engine
(:mod:`.counters`) and what a command-line flag is called (:mod:`.flagnames`).
It imports nothing of protobench's own.
"""
