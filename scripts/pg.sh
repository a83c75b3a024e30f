#!/usr/bin/env bash
# pg.sh - a private PostgreSQL server for spore's tests and benchmarks, from
# Debian's binaries (/usr/lib/postgresql/<version>/bin: initdb, pg_ctl).
#
#   scripts/pg.sh start <state-dir> [--listen ADDR,...] [--hba CIDR,...] [--port N]
#       initdb in a fresh temporary data directory, its own socket directory
#       and a free port, started as an unprivileged user when run as root (the
#       `postgres` user Debian's package creates, else `nobody`); creates the
#       role `spore` (random password) and its database `spore`; prints the
#       connection URL (postgresql://spore:<password>@<addr>:<port>/spore) as
#       its last line and writes it to <state-dir>/url. Listens on 127.0.0.1
#       plus --listen addresses; --hba admits password logins from more
#       networks (the several-hosts test's veth links).
#   scripts/pg.sh stop <state-dir>      stops the server and removes its data
#   scripts/pg.sh url <state-dir>       prints the URL of a started server
#   scripts/pg.sh check <url>           exit 0 when the server answers
#   scripts/pg.sh ensure <state-dir>    for CTest: $SPORE_TEST_PG when set (it
#       must answer, else exit 1), otherwise `start`; either way the URL ends
#       up in <state-dir>/url. `stop` later stops only a server it started.
#
# The server keeps PostgreSQL's durable defaults (fsync, synchronous_commit),
# so benchmark numbers are real commit costs. Nothing is installed here
# (scripts/deps.sh installs `postgresql`). Exit 1 with a message on failure.
set -euo pipefail

die() {
  echo "pg.sh: $*" >&2
  exit 1
}

bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then
    echo "$PG_BINDIR"
    return
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] || die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (scripts/deps.sh installs postgresql)"
  echo "$d"
}

# as_user <cmd...>: run as the server's user (root cannot run initdb/postgres).
as_user() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$PG_USER" -- "$@"
  else
    "$@"
  fi
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# random_port: a port below the kernel's ephemeral range, which no client
# socket takes as its own local port. A port inside that range may be held by
# a closed connection in TIME_WAIT: nothing listens there (port_free says
# free), yet a bind fails, and a server given several addresses starts on the
# others without 127.0.0.1 (PostgreSQL only warns).
random_port() {
  local low r=$((RANDOM * 32768 + RANDOM))
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  if [ "$low" -gt 12000 ] 2>/dev/null; then
    echo $((10000 + r % (low - 10000)))
  else # no room below the range: above its usual top then
    echo $((61000 + r % 4000))
  fi
}

# bound_everywhere <server log>: the server bound every listen address (a
# failed one is only a warning in its log).
bound_everywhere() { ! grep -q 'could not bind\|could not create listen socket' "$1" 2>/dev/null; }

# psql_check <url>: one query, bounded in time.
psql_check() {
  local bin
  bin=$(bindir)
  [ "$(PGCONNECT_TIMEOUT=5 timeout 20 "$bin/psql" "$1" -XAtqc 'select 1' 2>/dev/null)" = 1 ]
}

cmd_start() {
  local state=$1
  shift
  local listen="" hba="" port=""
  while [ $# -gt 0 ]; do
    case $1 in
    --listen) listen=$2; shift 2 ;;
    --hba) hba=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    *) die "unknown option $1" ;;
    esac
  done
  mkdir -p "$state"
  state=$(cd "$state" && pwd)
  if [ -f "$state/env" ]; then
    # A server from an earlier start: reuse it if it answers, else clear it.
    if psql_check "$(cat "$state/url" 2>/dev/null)"; then
      cat "$state/url"
      return 0
    fi
    cmd_stop "$state" || true
  fi
  local bin
  bin=$(bindir)
  PG_USER=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    if id postgres >/dev/null 2>&1; then PG_USER=postgres; else PG_USER=nobody; fi
  fi
  local root
  root=$(mktemp -d "${TMPDIR:-/tmp}/spore-pg.XXXXXX")
  chmod 755 "$root"
  mkdir -p "$root/data" "$root/sock"
  [ "$(id -u)" -ne 0 ] || chown -R "$PG_USER" "$root"
  # Everything needed to stop it, even if the rest of this script fails.
  printf 'PG_ROOT=%q\nPG_USER=%q\nPG_BIN=%q\n' "$root" "$PG_USER" "$bin" >"$state/env"

  local password
  password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  as_user "$bin/initdb" -D "$root/data" -U postgres -E UTF8 --locale=C --no-sync \
    --auth-local=trust --auth-host=scram-sha-256 >"$root/initdb.log" 2>&1 ||
    { cat "$root/initdb.log" >&2; die "initdb failed"; }
  local addrs="127.0.0.1${listen:+,$listen}"
  {
    echo "listen_addresses = '$addrs'"
    echo "unix_socket_directories = '$root/sock'"
    echo "max_connections = 300"
    echo "password_encryption = 'scram-sha-256'"
    echo "logging_collector = off"
    echo "log_min_messages = warning"
  } >>"$root/data/postgresql.conf"
  local cidr
  IFS=',' read -ra cidrs <<<"$hba"
  for cidr in "${cidrs[@]}"; do
    [ -n "$cidr" ] && echo "host all all $cidr scram-sha-256" >>"$root/data/pg_hba.conf"
  done

  local tries=0 started=0
  while [ $tries -lt 8 ] && [ $started -eq 0 ]; do
    tries=$((tries + 1))
    if [ -z "$port" ] || [ $tries -gt 1 ]; then
      port=$(random_port)
      port_free "$port" || continue
    fi
    rm -f "$root/server.log"
    if as_user "$bin/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 -o "-p $port" start \
      >/dev/null 2>&1; then
      started=1
      if ! bound_everywhere "$root/server.log"; then
        as_user "$bin/pg_ctl" -D "$root/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
        started=0
      fi
    fi
  done
  [ $started -eq 1 ] || { tail -n 20 "$root/server.log" >&2 2>/dev/null; die "the server did not start"; }
  echo "PG_PORT=$port" >>"$state/env"

  as_user "$bin/psql" -X -q -h "$root/sock" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE spore LOGIN PASSWORD '$password'" -c "CREATE DATABASE spore OWNER spore" \
    >/dev/null || die "cannot create the role and database"
  local url="postgresql://spore:$password@127.0.0.1:$port/spore"
  psql_check "$url" || die "the server does not accept $(redact "$url")"
  echo "$url" >"$state/url"
  echo "$url"
}

redact() { sed -E 's#(://[^:/@]*):[^@]*@#\1@#' <<<"$1"; }

cmd_stop() {
  local state=$1
  [ -f "$state/env" ] || return 0
  local PG_ROOT="" PG_USER="" PG_BIN=""
  # shellcheck disable=SC1091
  source "$state/env"
  if [ -n "$PG_ROOT" ] && [ -d "$PG_ROOT/data" ]; then
    as_user "$PG_BIN/pg_ctl" -D "$PG_ROOT/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  [ -n "$PG_ROOT" ] && [[ "$PG_ROOT" == */spore-pg.* ]] && rm -rf "$PG_ROOT"
  rm -f "$state/env" "$state/url"
}

cmd_ensure() {
  local state=$1
  mkdir -p "$state"
  if [ -n "${SPORE_TEST_PG:-}" ]; then
    psql_check "$SPORE_TEST_PG" || die "SPORE_TEST_PG is set but the server does not answer: $(redact "$SPORE_TEST_PG")"
    cmd_stop "$state" # a private server of an earlier run, if any
    echo "$SPORE_TEST_PG" >"$state/url"
    echo "using SPORE_TEST_PG: $(redact "$SPORE_TEST_PG")"
    return 0
  fi
  local url
  url=$(cmd_start "$state" | tail -n 1)
  echo "started a private server: $(redact "$url")"
}

[ $# -ge 1 ] || die "usage: pg.sh start|stop|url|ensure <state-dir> | check <url>"
case $1 in
start) [ $# -ge 2 ] || die "usage: pg.sh start <state-dir> [options]"; shift; cmd_start "$@" ;;
stop) [ $# -eq 2 ] || die "usage: pg.sh stop <state-dir>"; cmd_stop "$2" ;;
url) [ -f "${2:-}/url" ] || die "no server in ${2:-?}"; cat "$2/url" ;;
check) [ $# -eq 2 ] || die "usage: pg.sh check <url>"; psql_check "$2" ;;
ensure) [ $# -eq 2 ] || die "usage: pg.sh ensure <state-dir>"; cmd_ensure "$2" ;;
*) die "unknown command $1" ;;
esac
