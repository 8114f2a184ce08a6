"""What py-spy, perf and pprof write, read back; our pprof written and read again."""

from __future__ import annotations

import gzip

import pytest

from protobench.engine.stacks import perf, pprof, pyspy
from protobench.engine.stacks.model import Frame, StackCounter
from protobench.engine.stacks.protowire import WireError, Writer, fields
from protobench.engine.stacks.waits import is_wait

SERVE = "<module> (protobench/targets/serve.py:1);main (protobench/targets/serve.py:108);"
LOOP = SERVE + "run (uvloop/__init__.py:38);Runner.run (asyncio/runners.py:86)"
PYSPY_RAW = f"""\
{LOOP} 270
{LOOP};DelayLine._fired (protobench/targets/delays.py:93) 21
<module> (app.py:1);serve_forever (socketserver.py:220);select (selectors.py:398) 5
<module> (app.py:1);handle (app.py:9);uv__io_poll (linux.c:1452);epoll_pwait (libc.so.6) 7
<module> (app.py:1);handle (app.py:9);write (libc.so.6) 2
not a stack line
"""


def test_pyspy_raw_output_is_read_with_waiting_stacks_told_apart() -> None:
    profile = pyspy.parse_raw(PYSPY_RAW)
    assert profile.samples == 305
    assert profile.running == 23
    stacks = {frames[-1].name: (count, idle) for frames, count, idle in profile.labelled()}
    assert stacks["Runner.run"] == (270, True)
    assert stacks["DelayLine._fired"] == (21, False)
    assert stacks["select"] == (5, True)
    assert stacks["epoll_pwait"] == (7, True)
    assert stacks["write"] == (2, False)
    fired = next(f for f in profile.frames if f.name == "DelayLine._fired")
    assert fired == Frame(
        name="DelayLine._fired",
        file="protobench/targets/delays.py",
        line=93,
        module="protobench.targets.delays",
    )


def test_pyspy_frames_with_hostile_names_are_read_as_they_are() -> None:
    frame = pyspy.parse_frame("\x1b]0;pwned\x07f (m\x1b[2J.py:3)")
    assert frame.name == "\x1b]0;pwned\x07f"
    assert frame.file == "m\x1b[2J.py"
    assert frame.line == 3


def test_waits_are_blocking_calls_and_waiting_python_frames_only() -> None:
    assert is_wait(Frame(name="epoll_wait", file="libc.so.6"))
    assert is_wait(Frame(name="wait", file="threading.py"))
    assert not is_wait(Frame(name="poll", file="mine.py"))  # a Python function called poll
    assert not is_wait(Frame(name="select", file="mine.py"))
    assert not is_wait(Frame(name="write", file="libc.so.6"))


def test_pyspy_command_samples_idle_threads_by_function() -> None:
    args = pyspy.command("/bin/py-spy", 42, 100.0, pyspy.Path("/tmp/out.txt"), native=True)
    assert args[:4] == ["/bin/py-spy", "record", "--pid", "42"]
    assert {"--idle", "--function", "--native"} <= set(args)
    assert args[args.index("--format") + 1] == "raw"


SP = " "  # perf script ends a sample's first line with a space
PERF_SCRIPT = f"""\
    100.500000:{SP}
\tffffffff8202a23b tcp_write_xmit ([kernel.kallsyms])
\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           2a0b1 packet__write (/usr/sbin/mosquitto)
\t               0 [unknown] ([unknown])

    100.900000:{SP}
\t           2a0b1 packet__read+0x11 (/usr/sbin/mosquitto)
\t           1f000 [unknown] (/usr/sbin/mosquitto)

    99.000000:{SP}
\t           2a0b1 before_the_window (/usr/sbin/mosquitto)

    102.000000:{SP}
\t           2a0b1 after_the_window (/usr/sbin/mosquitto)
"""


def test_perf_script_output_is_read_within_the_window() -> None:
    profile = perf.parse_script(PERF_SCRIPT, 100.0, 101.0)
    assert profile.samples == 2
    stacks = {tuple(f.name for f in frames): count for frames, count, _ in profile.labelled()}
    assert stacks == {
        ("packet__write", "__GI___libc_write", "tcp_write_xmit"): 1,
        ("[mosquitto]", "packet__read"): 1,
    }
    kernel = next(f for f in profile.frames if f.name == "tcp_write_xmit")
    assert kernel.module == "kernel"
    assert next(f for f in profile.frames if f.name == "packet__write").module == "mosquitto"


def test_perf_record_samples_the_software_clock_on_the_monotonic_clock() -> None:
    args = perf.record_command("/usr/bin/perf", 7, 99.0, perf.Path("/tmp/perf.data"))
    assert args[args.index("-e") + 1] == "cpu-clock"
    assert args[args.index("-k") + 1] == "CLOCK_MONOTONIC"
    assert "-g" in args
    assert "--switch-output=1s" in args


def test_our_pprof_reads_back_the_same_stacks() -> None:
    counter = StackCounter()
    main = Frame(name="main", file="app.py", line=1, module="app")
    hot = Frame(name="hot", file="app.py", line=20, module="app")
    counter.add([main, hot], 30)
    counter.add([main], 5, idle=True)
    written = pprof.encode(counter.profile(), 100.0)
    decoded = pprof.decode(written)
    assert decoded.period == 10_000_000
    stacks = {
        tuple(f.name for f in frames): count for frames, count, _ in decoded.profile.labelled()
    }
    assert stacks == {("main", "hot"): 30, ("main",): 5}
    assert decoded.profile.unit == "samples"


def _go_like_heap() -> bytes:
    """A heap profile as Go writes it: four sample types, no ``samples`` one."""
    strings = [
        "",
        "alloc_objects",
        "count",
        "alloc_space",
        "bytes",
        "inuse_objects",
        "inuse_space",
        "main.grow",
        "/src/main.go",
        "github.com/a/b.(*T).Put",
    ]
    out = Writer()
    for name, unit in ((1, 2), (3, 4), (5, 2), (6, 4)):
        out.bytes_(1, Writer().varint(1, name).varint(2, unit).bytes())
    out.bytes_(2, Writer().packed(1, [2, 1]).packed(2, [1, 100, 1, 4096]).bytes())
    for loc, fn in ((1, 1), (2, 2)):
        line = Writer().varint(1, fn).varint(2, 12).bytes()
        out.bytes_(4, Writer().varint(1, loc).bytes_(4, line).bytes())
    out.bytes_(5, Writer().varint(1, 1).varint(2, 7).varint(4, 8).varint(5, 10).bytes())
    out.bytes_(5, Writer().varint(1, 2).varint(2, 9).varint(4, 8).bytes())
    for text in strings:
        out.bytes_(6, text.encode())
    return gzip.compress(out.bytes())


def test_a_go_heap_profile_is_read_as_bytes_in_use() -> None:
    decoded = pprof.decode(_go_like_heap())
    assert decoded.profile.unit == "bytes"
    ((frames, count, _),) = list(decoded.profile.labelled())
    assert count == 4096
    assert [f.name for f in frames] == ["main.grow", "github.com/a/b.(*T).Put"]
    assert [f.module for f in frames] == ["main", "github.com/a/b"]


@pytest.mark.parametrize(
    "data",
    [b"\x0a\xff", b"\x0a\x05ab", b"\x0f", gzip.compress(b"\x12\x80")[:-4], b"\x1f\x8bnotgzip"],
)
def test_bad_pprof_bytes_are_one_error(data: bytes) -> None:
    with pytest.raises(pprof.PprofError):
        pprof.decode(data)


def test_a_truncated_varint_is_a_wire_error() -> None:
    with pytest.raises(WireError):
        list(fields(b"\x08\x80\x80"))


def test_pprof_urls() -> None:
    assert pprof.profile_url("http://h:6060/debug/pprof/", "cpu", 2) == (
        "http://h:6060/debug/pprof/profile?seconds=2"
    )
    assert pprof.profile_url("http://h:6060/debug/pprof", "mutex", 0) == (
        "http://h:6060/debug/pprof/mutex"
    )
