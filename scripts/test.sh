#!/usr/bin/env bash
# The one command that sets up and runs every test: lint, import boundaries, migrations, pytest.
# PostgreSQL legs run against 127.0.0.1:5432 (RESOLUTE_TEST_PG to change) and are skipped, with
# the reason shown, when no server answers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== import boundaries"
.venv/bin/lint-imports
echo "== pytest"
# Two workers (pytest-xdist): the live tests spend most of their time waiting on masters,
# agents and tasks, so a 2-core machine runs two at once in much less than twice the time.
# A module's tests run on one worker, in order; modules that start Docker containers take
# turns (tests/conftest.py).
# RESOLUTE_TEST_WORKERS=0 runs everything in this one process.
set +e
.venv/bin/pytest -n "${RESOLUTE_TEST_WORKERS:-2}" --dist loadfile --durations=30 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$rc"
