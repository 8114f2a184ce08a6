"""Timing figures on a busy machine: held when the host is loaded, still failing when we are wrong.

A test that asserts the latency or throughput of a whole run puts those
assertions, and only those, in ``with figures(result):``. When one fails and
the run's own verdicts say its host was saturated by other processes
(``host_saturated``, with the reason) without blaming protobench
(``generator_bound``), that verdict is what the test checks: it goes on, with a
:class:`BusyHostWarning` in pytest's warnings summary naming the figure and
the reason. Otherwise the failure is a :class:`FiguresFailed`, which
:func:`retry_figures_once` answers by running the test once more, with a
warning saying so; a second failure fails. Every other assertion of the test
(counts, never-less bounds, verdicts) fails at once, as does every figure on
a quiet machine: no bound is loosened.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.support.cli import CliResult


class BusyHostWarning(UserWarning):
    """A timing figure excused by the run's host-saturated verdict, or a test retried."""


class FiguresFailed(AssertionError):
    """A timing figure failed on a run that did not judge its host saturated."""


def host_verdict(result: CliResult) -> str | None:
    """The reason the run gave for its host being saturated, unless it also blamed itself."""
    try:
        verdicts = result.json().get("verdicts", {})
    except ValueError:
        return None
    if verdicts.get("host_saturated") and not verdicts.get("generator_bound"):
        return str(verdicts.get("host_reason") or "no reason given")
    return None


@contextmanager
def figures(result: CliResult) -> Iterator[None]:
    """Assertions on timing figures of the run ``result`` (see the module's doc)."""
    try:
        yield
    except AssertionError as failure:
        reason = host_verdict(result)
        if reason is None:
            raise FiguresFailed(_what(failure)) from failure
        _warn(f"{_what(failure)}; the run judged its host saturated: {reason}")


def retry_figures_once[**P](test: Callable[P, None]) -> Callable[P, None]:
    """Run ``test`` once more when a figure fails (:class:`FiguresFailed`), and say so."""

    @functools.wraps(test)
    def retried(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            test(*args, **kwargs)
        except FiguresFailed as failure:
            _warn(f"{test.__name__} retried once after: {failure}")
            test(*args, **kwargs)

    return retried


def _what(failure: AssertionError) -> str:
    """The failed assertion and its message, on one line."""
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()]
    asserted = next((line for line in lines if line.startswith("assert ")), "")
    return " ".join(dict.fromkeys([*lines[:1], asserted])).strip() or type(failure).__name__


def _warn(message: str) -> None:
    warnings.warn(BusyHostWarning(message), stacklevel=4)
