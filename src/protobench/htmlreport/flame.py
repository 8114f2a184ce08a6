"""The target's profile in the HTML report: a flame graph of our own, and its top-N tables.

The flame graph is SVG drawn in the page by a small script of ours (no
library, no request): the root at the top, each function as wide as its
samples, its callees under it. Hover a frame for its samples and shares, click
one to zoom into it (click the root to zoom out); ``waiting`` stacks are grey
and can be hidden. Each graph's data is one JSON document in the page (a tree
of ``{"n": label, "v": samples, "w": waiting, "c": children}``, frames smaller
than :data:`MIN_SHARE` of the whole merged into their parent), so a profile
of any length makes a page of bounded size.

:func:`diff_flame` draws the new side's stacks coloured by how each frame's
share of the running samples changed from the base side (red: grew, blue:
shrank), beside ``diff``'s table of the largest changes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from protobench.engine.stacks.model import (
    TOP,
    Frame,
    ShareChange,
    StackProfile,
    TargetProfile,
    function_shares,
    module_shares,
)

MIN_SHARE = 0.0005
"""Frames with less than this share of all samples are not drawn on their own."""
MAX_NODES = 4000
"""The most frames one graph draws."""

STYLE = """
.flame { width: 100%; overflow: hidden; border: 1px solid #ddd; margin: .4em 0; }
.flame svg { display: block; width: 100%; font: 11px system-ui, sans-serif; }
.flame rect { stroke: #fff; stroke-width: .5; cursor: pointer; }
.flame text { pointer-events: none; fill: #111; }
.flame-bar { font-size: 12px; color: #555; }
"""

SCRIPT = r"""
(() => {
  const NS = 'http://www.w3.org/2000/svg', ROW = 17;
  const hue = (s) => {
    let h = 0;
    for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return h;
  };
  const colour = (node, diff) => {
    if (diff) {
      const d = Math.max(-1, Math.min(1, (node.d || 0) * 5));
      const k = Math.round(235 - Math.abs(d) * 150);
      return d >= 0 ? `rgb(255,${k},${k})` : `rgb(${k},${k},255)`;
    }
    if (node.w) return '#c8c8c8';
    const h = hue(node.m || node.n);
    return `hsl(${10 + h % 45},${70 + h % 25}%,${55 + h % 15}%)`;
  };
  const depth = (node) => 1 + Math.max(0, ...(node.c || []).map(depth));
  const draw = (holder) => {
    const data = JSON.parse(document.getElementById(holder.dataset.flame).textContent);
    const diff = holder.dataset.kind === 'diff';
    const bar = holder.previousElementSibling;
    const hide = bar.querySelector('input');
    let focus = data;
    const paint = () => {
      holder.textContent = '';
      const width = holder.clientWidth || 1000;
      const visible = (n) => !(hide && hide.checked && n.w);
      const value = (n) => {
        if (!visible(n)) return 0;
        if (!n.c) return n.v;
        return n.c.reduce((a, c) => a + value(c), 0) + (n.s || 0);
      };
      const rows = depth(focus);
      const svg = document.createElementNS(NS, 'svg');
      svg.setAttribute('height', rows * ROW);
      svg.setAttribute('viewBox', `0 0 ${width} ${rows * ROW}`);
      const total = value(focus) || 1;
      const place = (node, x, level, span) => {
        if (span < 0.5) return;
        const g = document.createElementNS(NS, 'g');
        const rect = document.createElementNS(NS, 'rect');
        rect.setAttribute('x', x); rect.setAttribute('y', level * ROW);
        rect.setAttribute('width', span); rect.setAttribute('height', ROW - 1);
        rect.setAttribute('fill', colour(node, diff));
        const title = document.createElementNS(NS, 'title');
        const share = (100 * node.v / data.v).toFixed(2);
        let tip = `${node.n}\n${node.v.toLocaleString()} samples, ${share}% of all`;
        if (node.w) tip += ' (waiting)';
        if (diff) tip += `\nchange in share: ${((node.d || 0) * 100).toFixed(2)} pp`;
        title.textContent = tip;
        rect.appendChild(title);
        rect.addEventListener('click', () => { focus = node === focus ? data : node; paint(); });
        g.appendChild(rect);
        if (span > 40) {
          const text = document.createElementNS(NS, 'text');
          text.setAttribute('x', x + 3); text.setAttribute('y', level * ROW + 12);
          const room = Math.floor((span - 6) / 6.5);
          const cut = node.n.slice(0, Math.max(0, room - 1)) + '…';
          text.textContent = node.n.length > room ? cut : node.n;
          g.appendChild(text);
        }
        svg.appendChild(g);
        let at = x;
        for (const child of node.c || []) {
          const part = value(child) / total * width;
          if (part > 0) place(child, at, level + 1, part);
          at += part;
        }
      };
      place(focus, 0, 0, width);
      holder.appendChild(svg);
    };
    if (hide) hide.addEventListener('change', paint);
    paint();
  };
  document.querySelectorAll('.flame').forEach(draw);
})();
"""


@dataclass
class _Node:
    label: str
    module: str = ""
    value: int = 0
    waiting: bool = False
    change: float | None = None
    children: dict[tuple[str, bool], _Node] = field(default_factory=dict)


def _tree(stacks: Iterable[tuple[tuple[Frame, ...], int, bool]], root: str) -> _Node:
    top = _Node(root)
    for frames, count, idle in stacks:
        top.value += count
        node = top
        for frame in frames:
            key = (frame.label, idle)
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node(frame.label, frame.module, waiting=idle)
            child.value += count
            node = child
    return top


def _plain(node: _Node, least: float, budget: list[int]) -> dict[str, Any]:
    """The JSON of ``node``: children under ``least`` samples dropped (their samples stay
    in the parent's width as its own), at most ``budget[0]`` nodes in all."""
    budget[0] -= 1
    out: dict[str, Any] = {"n": node.label, "v": node.value}
    if node.module:
        out["m"] = node.module
    if node.waiting:
        out["w"] = 1
    if node.change is not None:
        out["d"] = round(node.change, 4)
    kept = []
    for child in sorted(node.children.values(), key=lambda c: -c.value):
        if child.value >= least and budget[0] > 0:
            kept.append(_plain(child, least, budget))
    if kept:
        out["c"] = kept
        rest = node.value - sum(c["v"] for c in kept)
        if rest:
            out["s"] = rest
    return out


def _json(tree: _Node) -> str:
    data = _plain(tree, max(1.0, tree.value * MIN_SHARE), [MAX_NODES])
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _graph(graph_id: str, tree: _Node, kind: str, waiting: bool) -> str:
    toggle = "<label><input type='checkbox'> hide waiting stacks</label> · " if waiting else ""
    hint = "hover a frame for its samples, click one to zoom in, click it again to zoom out"
    return (
        f"<div class='flame-bar'>{toggle}{hint}</div>"
        f"<div class='flame' data-flame='{graph_id}' data-kind='{kind}'></div>"
        f"<script type='application/json' id='{graph_id}'>{_json(tree)}</script>"
    )


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def sampling_line(profile: TargetProfile, overhead: str) -> str:
    cpu = profile.cpu
    waiting = 1 - cpu.running / cpu.samples if cpu.samples else 0.0
    return (
        f"{profile.label}, pid {profile.pid}, {cpu.samples:,} samples from "
        f"{profile.start_s:.1f} s to {profile.end_s:.1f} s ({_pct(waiting)} waiting); "
        f"sampling cost: {overhead}"
    )


def profile_section(profile: TargetProfile, overhead: str) -> str:
    """The run page's ``target profile`` section: how it was sampled, the flame graph, the
    top functions (self and total) and modules of the running samples, a Go target's extras."""
    cpu = profile.cpu
    functions = function_shares(cpu)[:TOP]
    body = [
        "<h2 id='target-profile'>target profile</h2>",
        f"<p class='meta'>{html.escape(sampling_line(profile, overhead))}</p>",
        _graph("flame-run", _tree(cpu.labelled(), "all samples"), "run", cpu.running < cpu.samples),
        "<h3>top functions (share of the running samples)</h3>",
        _table(
            ["self", "total", "function", "file", "module"],
            [
                [_pct(f.self_share), _pct(f.total_share), f.function, f.file, f.module]
                for f in functions
            ],
        ),
        "<h3>by module (its functions' own time)</h3>",
        _table(
            ["share", "samples", "module"],
            [[_pct(m.share), f"{m.samples:,}", m.module] for m in module_shares(cpu)[:TOP]],
        ),
    ]
    for kind, extra in sorted(profile.extra.items()):
        body.append(f"<h3>{html.escape(kind)} profile ({html.escape(extra.unit)})</h3>")
        body.append(_graph(f"flame-{kind}", _tree(extra.labelled(), kind), "run", False))
    return "".join(body)


def _changes(tree: _Node, base: StackProfile) -> None:
    """Mark each node of the new side's ``tree`` with its change in share from ``base``."""
    before = _tree(base.labelled(), "")
    total_new, total_base = tree.value or 1, before.value or 1

    def walk(node: _Node, old: _Node | None) -> None:
        node.change = node.value / total_new - (old.value / total_base if old else 0.0)
        for key, child in node.children.items():
            walk(child, old.children.get(key) if old else None)

    walk(tree, before)


def diff_flame(base: StackProfile, new: StackProfile, changes: Sequence[ShareChange]) -> str:
    """The comparison page's section: the differential flame graph of the running stacks and
    the table of the largest changes in share."""
    running_new = [(f, n, w) for f, n, w in new.labelled() if not w]
    running_base = StackProfile(
        unit=base.unit, frames=base.frames, stacks=[s for s in base.stacks if not s.idle]
    )
    tree = _tree(running_new, "running samples (new)")
    _changes(tree, running_base)
    rows = [
        [
            c.function,
            c.file,
            _pct(c.base_self),
            _pct(c.new_self),
            f"{c.self_change * 100:+.1f} pp",
            _pct(c.base_total),
            _pct(c.new_total),
            f"{c.total_change * 100:+.1f} pp",
        ]
        for c in changes
    ]
    return (
        "<h2 id='target-profile'>target profile: what changed</h2>"
        "<p class='meta'>the new runs' running stacks; red: a larger share of the running "
        "samples than in the base runs, blue: a smaller one</p>"
        + _graph("flame-diff", tree, "diff", False)
        + "<h3>largest changes in share of the running samples</h3>"
        + _table(
            [
                "function",
                "file",
                "self base",
                "self new",
                "change",
                "total base",
                "total new",
                "change",
            ],
            rows,
        )
    )
