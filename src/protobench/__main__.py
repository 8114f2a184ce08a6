"""``python -m protobench``: the same as the ``protobench`` command."""

from protobench.cli import main

raise SystemExit(main())
