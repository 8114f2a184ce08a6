# The two commands of the README: `make run` and `make test`.
.PHONY: setup run test lint bench docs

setup:
	@scripts/setup

# The default profile (http-get) against its embedded target, headless; installs the
# package alone (scripts/setup run), not the test and docs tools.
run:
	@scripts/setup run
	.venv/bin/protobench run http-get --no-tui

# The whole test suite, with type, lint and import-layer checks (CI runs exactly this).
test: setup
	.venv/bin/ruff check src tests bench scripts
	.venv/bin/ruff format --check src tests bench scripts
	.venv/bin/mypy
	.venv/bin/lint-imports --no-cache
	.venv/bin/pytest -q -m "not soak"

bench: setup
	PROTOBENCH_BENCH_TOOLS=1 scripts/setup
	@echo "see bench/README.md: each script prints its figures and ratios"

# The documentation site on http://127.0.0.1:8000/, rebuilt on every change.
docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs serve --dev-addr 127.0.0.1:8000
