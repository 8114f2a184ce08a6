"""A discovered Haystack server as text: a summary, and a profile fitted to it (no I/O).

:func:`fitted_profile` writes a ``haystack`` profile of the read-only ops the
server lists (:class:`~.discover.ServerInfo`): ``about``, ``ops``, ``read`` of
the filters that matched (site, equip, point), ``read`` of the discovered
entities by id (``id==@…``), ``nav`` from the root, and ``his-read`` of the
points with history. Writes (``pointWrite``) are left commented out: a real
server's points are not ours to command.

The options given to ``discover`` are carried into ``[options]`` as given,
except secrets: a password is written as a commented-out placeholder with a
comment (set ``$HAYSTACK_PASSWORD``, or the variable ``password_env`` names,
or fill it in), and the value of a header whose name is a secret's is a
placeholder.
"""

from __future__ import annotations

import json

from protobench.protocols.haystack.discover import LIMIT, ServerInfo
from protobench.protocols.haystack.options import HAYSTACK_OP, HaystackOptions
from protobench.redaction import SECRET, is_secret_name, redact_url

READ_FILTERS = (("sites", "site"), ("equips", "equip"), ("points", "point"))
WATCH_OPS = ("watchSub", "watchPoll", "watchUnsub")
ABOUT_DETAILS = (
    ("serverName", "server"),
    ("vendorName", "vendor"),
    ("haystackVersion", "haystack"),
    ("tz", "tz"),
)
"""``about`` fields the summary shows when the server gives them, and their labels."""


def _toml(value: object) -> str:
    """A TOML value: strings, numbers, booleans, lists and flat tables of them."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def summary(info: ServerInfo) -> str:
    """What the server has, for a terminal."""
    about = info.about
    product = " ".join(p for p in (about.get("productName"), about.get("productVersion")) if p)
    details = [
        f"{label} {about[key]}" for key, label in ABOUT_DETAILS if about.get(key) not in (None, "")
    ]
    lines = [
        f"haystack server at {redact_url(info.url)}: {product or 'unnamed product'}"
        + (f" ({', '.join(details)})" if details else ""),
        f"login: {f'SCRAM as {info.user!r}' if info.user else 'none'}",
        f"ops ({len(info.ops)}): {', '.join(info.ops)}",
    ]
    if info.formats:
        formats = [
            f"{mime} ({'/'.join(w for w, on in (('receive', rx), ('send', tx)) if on)})"
            for mime, rx, tx in info.formats
        ]
        lines.append(f"formats: {', '.join(formats)}")
    for key, found in info.entities.items():
        more = "+" if len(found) == LIMIT else ""
        ids = ", ".join(f"@{e.id}" + (f" {json.dumps(e.dis)}" if e.dis else "") for e in found)
        lines.append(f"{key.replace('_', ' ')}: {len(found)}{more}{': ' if ids else ''}{ids}")
    watch = [op for op in WATCH_OPS if op in info.ops]
    lines.append(
        f"hisRead: {'yes' if 'hisRead' in info.ops else 'no'}, "
        f"pointWrite: {'yes' if 'pointWrite' in info.ops else 'no'}, "
        f"watch: {', '.join(watch) if watch else 'no'}"
    )
    return "\n".join(lines)


def _options(info: ServerInfo, options: HaystackOptions, given: set[str]) -> list[str]:
    """The ``[options]`` lines of the options given, secrets as placeholders.

    A server that answered without a login gets ``auth = false`` unless ``auth`` was given.
    """
    lines: list[str] = []
    if info.user is None and "auth" not in given:
        lines += ["# The server answered without a login.", "auth = false"]
    for name in sorted(given):
        if name == "password":
            lines += [
                "# The password given on the command line is not written here: set",
                f"# ${options.password_env} (password_env), or uncomment and fill in:",
                f"# password = {_toml(SECRET)}",
            ]
            continue
        value = getattr(options, name)
        if name == "headers":
            value = {k: SECRET if is_secret_name(k) else v for k, v in value.items()}
            if SECRET in value.values():
                lines.append(f"# Secret header values are placeholders ({SECRET}): fill them in.")
        if value is not None:
            lines.append(f"{name} = {_toml(value)}")
    return lines


def _group(lines: list[str], comment: str, **fields: object) -> None:
    lines += ["", f"# {comment}", "[[group]]"]
    lines += [f"{key} = {_toml(value)}" for key, value in fields.items()]


def fitted_profile(info: ServerInfo, name: str, options: HaystackOptions, given: set[str]) -> str:
    """A profile (TOML text) of the read-only ops the server has, on its real entities."""
    target = redact_url(info.url)
    has = set(info.ops)
    lines = [
        f"# Fitted by `protobench discover haystack` to {target}",
        f"# ({info.about.get('productName', '?')} {info.about.get('productVersion', '')}).",
        f"name = {_toml(name)}",
        'protocol = "haystack"',
        f"description = {_toml(f'Reads of what the Haystack server at {target} has')}",
        f"target = {_toml(target)}",
        'warmup = "2s"',
        'duration = "10s"',
    ]
    option_lines = _options(info, options, given)
    if option_lines:
        lines += ["", "[options]", *option_lines]
    for op in ("about", "ops"):
        if HAYSTACK_OP[op] in has:
            _group(lines, f"GET {op}.", name=op, op=op, count=1)
    if "read" in has:
        for key, expr in READ_FILTERS:
            if info.entities.get(key):
                _group(
                    lines,
                    f"Read the first {LIMIT * 10} entities matching {expr!r}.",
                    name=f"read-{expr}",
                    op="read",
                    count=2,
                    filters=[expr],
                    limit=LIMIT * 10,
                )
        ids = [e.id for key, _ in READ_FILTERS for e in info.entities.get(key, [])]
        if ids:
            _group(
                lines,
                "Read the discovered entities one by one, by id.",
                name="read-by-id",
                op="read",
                count=2,
                filters=[f"id==@{ident}" for ident in ids],
                min_rows=1,
            )
    if "nav" in has:
        _group(lines, "Navigate from the root.", name="nav", op="nav", count=1, nav_ids=[""])
    his = [e.id for e in info.entities.get("his_points", [])]
    if "hisRead" in has and his:
        _group(
            lines,
            "History of today of the points that have one.",
            name="his-read",
            op="his-read",
            count=1,
            points=his,
            range="today",
        )
    writable = [e.id for e in info.entities.get("writable_points", [])]
    if "pointWrite" in has and writable:
        lines += [
            "",
            "# The server serves pointWrite: commanding a real point is left to you.",
            "# [[group]]",
            '# name = "point-write"',
            '# op = "point-write"',
            "# count = 1",
            f"# points = {_toml(writable)}",
            "# level = 16",
            "# values = [72.5, 68.0]",
        ]
    return "\n".join(lines) + "\n"
