# Real agent CLIs from npm, pinned: the oldest and newest Claude Code we support, Codex CLI and
# Gemini CLI. Sourced by .ci/run; exports where each lives and that the tests must find them.
CLAUDE_OLD=2.1.197
CLAUDE_NEW=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0

install_agents() {
  local npm_q=(--no-audit --no-fund --loglevel=error)
  if [ "$(claude --version 2>/dev/null | cut -d' ' -f1)" != "$CLAUDE_OLD" ]; then
    npm install -g "${npm_q[@]}" "@anthropic-ai/claude-code@$CLAUDE_OLD" >/dev/null
  fi
  local newdir=/opt/donegate-agents/claude-$CLAUDE_NEW
  if [ ! -x "$newdir/node_modules/.bin/claude" ]; then
    mkdir -p "$newdir" && npm install --prefix "$newdir" "${npm_q[@]}" \
      "@anthropic-ai/claude-code@$CLAUDE_NEW" >/dev/null
  fi
  if [ "$(codex --version 2>/dev/null)" != "codex-cli $CODEX_VERSION" ]; then
    npm install -g "${npm_q[@]}" "@openai/codex@$CODEX_VERSION" >/dev/null
  fi
  if [ "$(gemini --version 2>/dev/null)" != "$GEMINI_VERSION" ]; then
    npm install -g "${npm_q[@]}" "@google/gemini-cli@$GEMINI_VERSION" >/dev/null
  fi
  export DONEGATE_CLAUDE_NEW="$newdir/node_modules/.bin/claude"
  export DONEGATE_REQUIRE_CLAUDE=1 DONEGATE_REQUIRE_CODEX=1 DONEGATE_REQUIRE_GEMINI=1
}
