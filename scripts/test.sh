#!/usr/bin/env bash
# The whole test suite on a fresh machine (README "Two commands on a fresh machine"; .ci/run calls exactly this).
# Uses DATABASE_URL / NATS_URL when set; otherwise the local servers on their standard
# ports, starting Postgres and nats-server first when they are installed but stopped.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'test.sh: %s\n' "$*" >&2; }
tcp_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Debian packages the suite runs: nats-server (the local NATS below, and `connectors dev`'s
# child in the dev tests) and chromium (the browser tests, test/support/browser.ts). Installed
# quietly when missing and apt-get is usable; when that fails, the tests that need them fail
# saying so, they never skip.
apt_install() {
  command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] || { say "cannot install $1 here (no apt-get as root)"; return 1; }
  say "installing $1 (apt-get)"
  local log="${TMPDIR:-/tmp}/connectors-apt-$1.log"
  export DEBIAN_FRONTEND=noninteractive
  if ! timeout 600 apt-get install -y -q --no-install-recommends "$1" >"$log" 2>&1; then
    timeout 300 apt-get update -q >>"$log" 2>&1 || true
    timeout 600 apt-get install -y -q --no-install-recommends "$1" >>"$log" 2>&1 || { say "apt-get install $1 failed:"; tail -5 "$log" >&2; return 1; }
  fi
}
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  apt_install nats-server || say "no nats-server: the dev tests will fail"
fi
if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  apt_install chromium || say "no chromium: the browser tests will fail"
fi

if [ -z "${DATABASE_URL:-}" ]; then
  if ! tcp_open 127.0.0.1 5432; then
    if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
      say "starting the local Postgres cluster"
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    fi
    for _ in $(seq 1 30); do tcp_open 127.0.0.1 5432 && break; sleep 1; done
    if ! tcp_open 127.0.0.1 5432; then
      if docker info >/dev/null 2>&1; then
        say "no local Postgres; a Docker engine is here, so testcontainers will start Postgres and NATS"
        export TEST_USE_CONTAINERS=1
      else
        say "no Postgres on 127.0.0.1:5432 and none could be started; set DATABASE_URL"; exit 1
      fi
    fi
  fi
  [ "${TEST_USE_CONTAINERS:-}" = 1 ] || export TEST_ADMIN_DATABASE_URL="${TEST_ADMIN_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
fi

if [ -z "${NATS_URL:-}" ] && [ "${TEST_USE_CONTAINERS:-}" != 1 ]; then
  if ! tcp_open 127.0.0.1 4222; then
    NATS_BIN="$(command -v nats-server || echo /usr/sbin/nats-server)"
    if [ -x "$NATS_BIN" ]; then
      say "starting nats-server with JetStream on 127.0.0.1:4222"
      mkdir -p /var/lib/nats-server 2>/dev/null || true
      if command -v start-stop-daemon >/dev/null 2>&1; then
        start-stop-daemon --start --oknodo --background --exec "$NATS_BIN" -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
      else
        nohup "$NATS_BIN" -a 127.0.0.1 -p 4222 -js -sd "${TMPDIR:-/tmp}/nats-js" >/dev/null 2>&1 &
      fi
    fi
    for _ in $(seq 1 30); do tcp_open 127.0.0.1 4222 && break; sleep 1; done
    if ! tcp_open 127.0.0.1 4222; then
      if docker info >/dev/null 2>&1; then
        say "no local NATS; a Docker engine is here, so testcontainers will start Postgres and NATS"
        export TEST_USE_CONTAINERS=1
      else
        say "no NATS on 127.0.0.1:4222 and none could be started (apt-get install nats-server); set NATS_URL"; exit 1
      fi
    fi
  fi
  [ "${TEST_USE_CONTAINERS:-}" = 1 ] || export NATS_URL="nats://127.0.0.1:4222"
fi

[ -d node_modules ] || npm ci
npm run format:check
npm run lint
npm run build
npx tsc -p tsconfig.json --noEmit
[ "$#" -gt 0 ] && exec npx vitest run "$@"

# Two passes. The tests that run several node processes and kill them (kill -9, SIGTERM,
# a node per second under load) measure the service's own promises (§8.24, §9): they run
# after the rest, one file at a time, so no other file's processes compete for the 2 cores.
SOLO=(
  test/integration/chaos-smoke.test.ts
  test/integration/codehost-backfill-failover.test.ts
  test/integration/failover.test.ts
  test/integration/faults-churn.test.ts
  test/integration/group-commit-kill.test.ts
  test/integration/webhooks-failover.test.ts
)
exclude=()
for f in "${SOLO[@]}"; do exclude+=(--exclude "$f"); done
npx vitest run "${exclude[@]}"
exec npx vitest run --maxWorkers 1 "${SOLO[@]}"
