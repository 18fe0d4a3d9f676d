# Sourced by .ci/run: the real agent CLIs that tests/agents_e2e drives against the emulator,
# from the npm registry at pinned versions (no login, no network beyond npm: every CLI is
# pointed at the emulator on 127.0.0.1 by the tests). Claude Code twice: the oldest version
# donegate supports on PATH, the newest in a prefix of its own.
#   source .ci/agents.sh && install_agents
CLAUDE_OLDEST=2.1.197
CLAUDE_NEWEST=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
CLAUDE_NEW_PREFIX=${CLAUDE_NEW_PREFIX:-/opt/claude-new}

# The x.y.z a CLI reports for --version, or nothing when it is missing.
agent_version() {
  "$@" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n1 || true
}

# npm install PACKAGE@VERSION [npm args...] unless COMMAND already reports VERSION.
ensure_agent() {
  local command=$1 package=$2 version=$3
  shift 3
  if [ "$(agent_version "$command")" != "$version" ]; then
    npm install --no-audit --no-fund "$@" "$package@$version" >/dev/null
  fi
}

install_agents() {
  ensure_agent claude @anthropic-ai/claude-code "$CLAUDE_OLDEST" -g
  ensure_agent codex @openai/codex "$CODEX_VERSION" -g
  ensure_agent gemini @google/gemini-cli "$GEMINI_VERSION" -g
  mkdir -p "$CLAUDE_NEW_PREFIX"
  ensure_agent "$CLAUDE_NEW_PREFIX/node_modules/.bin/claude" @anthropic-ai/claude-code \
    "$CLAUDE_NEWEST" --prefix "$CLAUDE_NEW_PREFIX"
  export DONEGATE_CLAUDE_NEW="$CLAUDE_NEW_PREFIX/node_modules/.bin/claude"
  # A missing binary is a failure in CI, not a skip; the versions are checked by the tests.
  export DONEGATE_REQUIRE_CLAUDE=1 DONEGATE_REQUIRE_CODEX=1 DONEGATE_REQUIRE_GEMINI=1
  export DONEGATE_CLAUDE_OLDEST=$CLAUDE_OLDEST DONEGATE_CLAUDE_NEWEST=$CLAUDE_NEWEST
  export DONEGATE_CODEX_VERSION=$CODEX_VERSION DONEGATE_GEMINI_VERSION=$GEMINI_VERSION
}
