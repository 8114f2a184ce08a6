"""Where the target process spends its time: sampling its stacks during sustain.

``model`` holds the typed profile (stacks with counts, idle or running, the
shares per function and module); ``pyspy``, ``perf`` and ``pprof`` read what
each tool records; ``choose`` picks the tool for a process. The recorder that runs it over the
sustain phase in chunks, one live update per chunk, is :mod:`protobench.engine.profiler`.
"""
