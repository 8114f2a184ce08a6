"""The self-contained HTML report of a run (``protobench report``) and of a comparison.

:mod:`.view` is the only module that reads a snapshot's dict: it turns it into
the plain series and tables of :class:`.view.RunView`. :mod:`.charts` draws
them with Bokeh (the optional ``report`` extra), :mod:`.page` lays out the one
HTML file, with Bokeh's JavaScript inlined so the page works offline.
"""
