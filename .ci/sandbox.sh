#!/usr/bin/env bash
# The sandbox tests again as a user that is not root: CI runs as root, where bubblewrap works
# through privilege; users run it unprivileged (user namespaces). `run_sandbox_tests_unprivileged`
# makes a user (`donegate-ci`, no password, no sudo), installs bubblewrap when it is missing,
# and runs the sandbox and clean-room tests as that user against this checkout's venv.
# Two pytest workers: the tests mostly wait on jails and agent programs (about 6 minutes
# serially on CI-sized machines, about 4 with two workers).
# Usage (from the repository root, after the README's commands made .venv):
#   source .ci/sandbox.sh && run_sandbox_tests_unprivileged
run_sandbox_tests_unprivileged() {
  local user=donegate-ci root
  root=$(pwd)
  command -v bwrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }
  id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  # the user reads the checkout and the venv (and the interpreter the venv points at)
  local dir="$root"
  while [ "$dir" != "/" ]; do chmod o+x "$dir" 2>/dev/null || true; dir=$(dirname "$dir"); done
  chmod -R o+rX "$root" 2>/dev/null || true
  local base
  base=$("$root/.venv/bin/python" -c 'import sys; print(sys.base_prefix)')
  dir="$base"
  while [ "$dir" != "/" ]; do chmod o+x "$dir" 2>/dev/null || true; dir=$(dirname "$dir"); done
  chmod -R o+rX "$base" 2>/dev/null || true
  local tmp
  tmp=$(runuser -u "$user" -- mktemp -d)
  runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="/home/$user" \
    "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$root" -n 2 --dist loadgroup \
    --basetemp "$tmp/pytest" \
    "$root/tests/sandbox" "$root/tests/harness/agents/test_agent_clean_room.py"
}
