"""The self-contained HTML report of a run (``protobench report``) and of a comparison.

:mod:`.view` is the only module that reads a snapshot: it turns it into the
plain series and tables of :class:`.view.RunView`; :mod:`.verdict` is the
answer the page opens on (outcome, checks, key figures). :mod:`.charts`
describes the charts as data for the page's own script (``charts.js``, canvas,
no library), :mod:`.page` lays out the one HTML file (``report.css`` and the
script inlined, so the page works offline) and :mod:`.compare` the page of
``diff --report``.
"""
