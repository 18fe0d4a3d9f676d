# Throwaway Redis and PostgreSQL on 127.0.0.1 for the worker tests; sourced by .ci/run.
# Exports DONEGATE_TEST_REDIS_URL and DONEGATE_TEST_POSTGRES_URL when the service is up.
SERVICES_DIR=$(mktemp -d /tmp/donegate-ci.XXXXXX)

start_services() {
  if ! command -v redis-server >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq redis-server) >/dev/null 2>&1 || true
  fi
  if command -v redis-server >/dev/null 2>&1; then
    redis-server --bind 127.0.0.1 --port "${DONEGATE_CI_REDIS_PORT:-6399}" --save "" --appendonly no --daemonize yes \
      --dir "$SERVICES_DIR" --pidfile "$SERVICES_DIR/redis.pid" >/dev/null
    export DONEGATE_TEST_REDIS_URL=redis://127.0.0.1:${DONEGATE_CI_REDIS_PORT:-6399}/0
  fi
  local bindir
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$bindir" ]; then
    mkdir -p "$SERVICES_DIR/pg" && chown postgres "$SERVICES_DIR/pg" && chmod 755 "$SERVICES_DIR"
    runuser -u postgres -- "$bindir/initdb" -D "$SERVICES_DIR/pg/data" -A trust -U postgres >/dev/null
    runuser -u postgres -- "$bindir/pg_ctl" -D "$SERVICES_DIR/pg/data" -l "$SERVICES_DIR/pg/log" \
      -o "-c listen_addresses=127.0.0.1 -p ${DONEGATE_CI_PG_PORT:-54329} -k $SERVICES_DIR/pg" -w start >/dev/null
    export DONEGATE_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:${DONEGATE_CI_PG_PORT:-54329}/postgres
  fi
}

stop_services() {
  if [ -f "$SERVICES_DIR/redis.pid" ]; then kill "$(cat "$SERVICES_DIR/redis.pid")" 2>/dev/null || true; fi
  local bindir
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$bindir" ] && [ -d "$SERVICES_DIR/pg/data" ]; then
    runuser -u postgres -- "$bindir/pg_ctl" -D "$SERVICES_DIR/pg/data" -m fast stop >/dev/null 2>&1 || true
  fi
}
