"""What a command-line flag is called: its names, its placeholder and its ``--help`` line.

:class:`FlagNames` is what the run settings' flags
(:class:`protobench.profiles.settings.Setting`) and the one-line runs' flags
(:class:`protobench.protocols.flags.ProtocolFlag`) share; the command line
makes one option of each (:func:`protobench.cli.common.flag_option`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class FlagNames:
    """A flag's long name (``None``: no flag), short name, aliases, placeholder, help line.

    ``aliases`` are more names, for other tools' habits (``-z``: oha's and hey's
    duration).
    """

    flag: str | None = None
    short: str | None = None
    aliases: tuple[str, ...] = ()
    metavar: str = ""
    help: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The flag's names: long, short, aliases (none without a long name)."""
        if self.flag is None:
            return ()
        short = (self.short,) if self.short else ()
        return (self.flag, *short, *self.aliases)

    @property
    def env(self) -> str | None:
        """The environment variable that gives the flag's value when it is not given (none
        here; a run setting's is ``PROTOBENCH_NAME``)."""
        return None

    @property
    def label(self) -> str:
        """How an error names it: ``--header/-H``."""
        return "/".join(self.names)
