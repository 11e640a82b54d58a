#!/usr/bin/env bash
# Optional, slow, and installs system packages: NOT part of `npm test` or .ci/run.
#
# Builds and runs the container image and the compose cluster with podman on a Debian bookworm
# machine (as root) where no Docker engine runs and no container registry is reachable: the base
# images are made locally (Debian from debootstrap, Node.js copied from this machine, PostgreSQL
# from Debian's package); the project's own Dockerfile and compose.yaml are used unchanged, with
# only the base images swapped (the Dockerfile's NODE_IMAGE build argument, a compose override for
# postgres). What it checks, in order (docs/operations.md, "Container", says what it printed):
#
#   1. compose.yaml's shape: `docker-compose config` (Compose v1) resolves it, with and without
#      POSTGRES_PASSWORD (which must be refused when missing);
#   2. the image builds (`podman build --format docker`, so HEALTHCHECK is kept), its size;
#   3. it runs with DATA_DIR on a named volume and the port on 127.0.0.1: /healthz answers 200,
#      the process is not root, the image's HEALTHCHECK command passes;
#   4. a new container on the same volume keeps the data (an account and a token made by the CLI
#      inside the first container authenticate an API call in the second);
#   5. `podman-compose up --scale worker=2`: postgres, the api and two workers come up, the api's
#      /readyz answers 200 and each worker's /healthz (WORKER_PORT) answers 200.
#
#   sudo bash scripts/container-check.sh            # everything; about 10-15 min on 2 cores
#   KEEP=1 sudo bash scripts/container-check.sh     # leave the containers and volumes behind
#
# Needs: Debian bookworm, root, Debian's apt mirror and the npm registry, Node.js >= 20.12 on this
# machine (its binary and npm become the base image's). Work files: $WORK (default below). The
# images it builds stay (localhost/debian:bookworm is reused; the others are build cache); remove
# them with `podman rmi` and `podman image prune`.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/waygate-container-check}
PORT=${PORT:-3980}
COMPOSE_PORT=${COMPOSE_PORT:-3981}
PROJECT=waygate-check
mkdir -p "$WORK"

step() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
# Waits for a condition (a command) up to $1 seconds.
wait_for() {
  local limit=$1; shift
  local deadline=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 1
  done
}

[ "$(id -u)" = 0 ] || fail "run as root (it installs packages and runs podman as root)"

step "packages"
need=()
for tool in podman buildah podman-compose docker-compose debootstrap; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
podman --version; podman-compose version 2>&1 | grep -i "podman-compose" || true; docker-compose --version

# Podman's defaults do not start containers in this kind of sandbox:
# - crun refuses a cgroup v1/v2 hybrid ("cgroups in hybrid mode not supported"): use runc;
# - without CAP_SYS_RESOURCE, the default rlimits (nofile 1048576, nproc 4194304) cannot be set
#   ("setrlimit RLIMIT_NOFILE: Operation not permitted"): ask for lower ones.
export CONTAINERS_CONF=$WORK/containers.conf
cat > "$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=10000:10000", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF

step "compose.yaml's shape (docker-compose config)"
# Compose v1 predates the top-level `name:` (Compose v2 reads it); it checks the rest without it.
sed '/^name: /d' "$ROOT/compose.yaml" > "$WORK/compose-v1.yaml"
if env -u POSTGRES_PASSWORD docker-compose -f "$WORK/compose-v1.yaml" --project-directory "$ROOT" config >"$WORK/config-nopw.txt" 2>&1; then
  fail "compose config accepted a missing POSTGRES_PASSWORD"
fi
grep -q 'set POSTGRES_PASSWORD' "$WORK/config-nopw.txt" || fail "unexpected error without POSTGRES_PASSWORD: $(cat "$WORK/config-nopw.txt")"
echo "without POSTGRES_PASSWORD: refused ($(tr -d '\n' < "$WORK/config-nopw.txt" | tail -c 120))"
POSTGRES_PASSWORD=check docker-compose -f "$WORK/compose-v1.yaml" --project-directory "$ROOT" config > "$WORK/config.yaml"
echo "with POSTGRES_PASSWORD: resolved; services: $(POSTGRES_PASSWORD=check docker-compose -f "$WORK/compose-v1.yaml" --project-directory "$ROOT" config --services | tr '\n' ' ')"
grep -q 'DATABASE_URL: postgres://waygate:check@postgres:5432/waygate' "$WORK/config.yaml" || fail "DATABASE_URL not resolved"

step "base image: Debian bookworm (debootstrap)"
if ! podman image exists localhost/debian:bookworm; then
  rm -rf "$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian
  rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
  tar -C "$WORK/rootfs" -c . | podman import - localhost/debian:bookworm
fi

step "base image: Node.js from this machine, in the shape of the official node image"
node_bin=$(command -v node)
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 12) ? 0 : 1)' \
  || fail "Node.js >= 20.12 needed on this machine, found $(node --version)"
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
rm -rf "$WORK/node" && mkdir -p "$WORK/node"
cp "$node_bin" "$WORK/node/node"
cp -a "$npm_dir" "$WORK/node/npm"
# This machine's certificate authorities, so that npm ci in the build trusts what this machine trusts.
cp /etc/ssl/certs/ca-certificates.crt "$WORK/node/ca-certificates.crt"
cat > "$WORK/node/Containerfile" <<'EOF'
FROM localhost/debian:bookworm
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version && npm --version
CMD ["node"]
EOF
podman build -q -t localhost/node:bookworm-local "$WORK/node"

step "base image: PostgreSQL 15 from Debian, with the official postgres image's first-start setup"
mkdir -p "$WORK/postgres"
cat > "$WORK/postgres/entrypoint.sh" <<'EOF'
#!/bin/sh
# What compose.yaml relies on from the official postgres image: a first start on an empty PGDATA
# creates POSTGRES_USER with POSTGRES_PASSWORD, and POSTGRES_DB; clients connect with a password.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  [ "$POSTGRES_DB" = postgres ] || createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
EOF
chmod +x "$WORK/postgres/entrypoint.sh"
cat > "$WORK/postgres/Containerfile" <<'EOF'
FROM localhost/debian:bookworm
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* /var/lib/postgresql/15 /etc/postgresql/15 \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    POSTGRES_USER=postgres \
    POSTGRES_DB=postgres
COPY entrypoint.sh /usr/local/bin/postgres-entrypoint
USER postgres
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]
EOF
podman build -q -t localhost/postgres:15-local "$WORK/postgres"

step "build the image (Dockerfile, NODE_IMAGE=localhost/node:bookworm-local)"
started=$(date +%s)
podman build --format docker --build-arg NODE_IMAGE=localhost/node:bookworm-local -t localhost/waygate:latest "$ROOT"
echo "build: $(( $(date +%s) - started )) s; image size: $(podman image inspect localhost/waygate:latest --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"
podman image inspect localhost/waygate:latest --format 'user={{.Config.User}} healthcheck={{json .Config.Healthcheck.Test}}'

cleanup() {
  [ "${KEEP:-}" = 1 ] && return
  podman rm -f -t 5 waygate-check-a waygate-check-b >/dev/null 2>&1 || true
  podman volume rm -f waygate-check-data >/dev/null 2>&1 || true
  # -v: the anonymous volumes of the image's VOLUME /data (podman-compose down leaves them, and the network).
  podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman rm -f -v -t 5 >/dev/null 2>&1 || true
  [ -f "$WORK/compose.override.yaml" ] && (cd "$WORK" && POSTGRES_PASSWORD=unused \
    podman-compose -p "$PROJECT" -f compose.yaml -f compose.override.yaml down -v >/dev/null 2>&1) || true
  podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup

step "run: DATA_DIR on a volume, 127.0.0.1:$PORT"
podman volume create waygate-check-data >/dev/null
started=$(date +%s)
podman run -d --name waygate-check-a -p "127.0.0.1:$PORT:3000" -v waygate-check-data:/data localhost/waygate:latest >/dev/null
wait_for 180 curl -fsS "http://127.0.0.1:$PORT/healthz" || { podman logs waygate-check-a; fail "/healthz did not answer"; }
echo "/healthz 200 after $(( $(date +%s) - started )) s (first start: initdb and migrations): $(curl -fsS "http://127.0.0.1:$PORT/healthz")"
wait_for 60 curl -fsS "http://127.0.0.1:$PORT/readyz" || fail "/readyz did not answer 200"
echo "process user: $(podman exec waygate-check-a id)"
[ "$(podman exec waygate-check-a id -u)" != 0 ] || fail "runs as root"
podman exec waygate-check-a sh -c 'ls -ld /data /data/pgdata'
# The image's HEALTHCHECK command, as the engine runs it (podman healthcheck run reads it from the image).
podman healthcheck run waygate-check-a && echo "HEALTHCHECK: healthy"
podman logs waygate-check-a 2>&1 | grep -o '"setupUrl":"[^"]*"' | head -1

step "data survives a new container on the same volume"
podman exec waygate-check-a node dist/cli.js accounts create --email check@example.com --password 'container-check-pw-1' >/dev/null
token=$(podman exec waygate-check-a node dist/cli.js tokens create --email check@example.com --name check 2>/dev/null)
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: $token" "http://127.0.0.1:$PORT/contacts")" = 200 ] || fail "token does not authenticate"
started=$(date +%s)
podman stop -t 30 waygate-check-a >/dev/null
echo "stop: $(( $(date +%s) - started )) s, exit code $(podman inspect waygate-check-a --format '{{.State.ExitCode}}')"
podman rm waygate-check-a >/dev/null
started=$(date +%s)
podman run -d --name waygate-check-b -p "127.0.0.1:$PORT:3000" -v waygate-check-data:/data localhost/waygate:latest >/dev/null
wait_for 180 curl -fsS "http://127.0.0.1:$PORT/healthz" || { podman logs waygate-check-b; fail "/healthz did not answer after the restart"; }
echo "/healthz 200 after $(( $(date +%s) - started )) s on the existing volume"
status=$(curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: $token" "http://127.0.0.1:$PORT/contacts")
echo "GET /contacts with the token made before: $status"
[ "$status" = 200 ] || fail "the data did not survive"
! podman logs waygate-check-b 2>&1 | grep -q setupUrl || fail "the new container asks for setup again"
podman rm -f -t 10 waygate-check-b >/dev/null

step "compose: podman-compose up --scale worker=2 (postgres from Debian, the image built above)"
# The project's compose.yaml, unchanged, beside an override that swaps the postgres image and works
# around two defects of Debian's podman-compose 1.0.3 (Docker Compose needs neither):
# - it parses `--scale` and ignores it; it honours deploy.replicas, which is what --scale sets;
# - it leaves `${VAR:-}` (an empty default) unexpanded, whatever the environment holds, so
#   SESSION_SECRET would be the literal text "${SESSION_SECRET:-}" and fail validation: the override
#   gives SESSION_SECRET and METRICS_TOKEN values.
cp "$ROOT/compose.yaml" "$WORK/compose.yaml"
cat > "$WORK/compose.override.yaml" <<EOF
services:
  postgres:
    image: localhost/postgres:15-local
  api:
    environment:
      SESSION_SECRET: container-check-session-secret-0123456789
      METRICS_TOKEN: container-check-metrics
  worker:
    deploy:
      replicas: 2
    environment:
      SESSION_SECRET: container-check-session-secret-0123456789
      METRICS_TOKEN: container-check-metrics
EOF
started=$(date +%s)
(cd "$WORK" && POSTGRES_PASSWORD=check-password WAYGATE_PORT=127.0.0.1:$COMPOSE_PORT \
  podman-compose -p "$PROJECT" -f compose.yaml -f compose.override.yaml up -d --no-build --scale worker=2)
podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}} {{.Status}}'
wait_for 240 curl -fsS "http://127.0.0.1:$COMPOSE_PORT/readyz" || { podman ps -a; for c in $(podman ps -a -q --filter "label=io.podman.compose.project=$PROJECT"); do podman logs --tail 20 "$c"; done; fail "api /readyz"; }
echo "api /readyz 200 after $(( $(date +%s) - started )) s: $(curl -fsS "http://127.0.0.1:$COMPOSE_PORT/readyz")"
workers=$(podman ps -q --filter "label=io.podman.compose.project=$PROJECT" --filter "label=com.docker.compose.service=worker")
echo "worker containers running: $(echo "$workers" | grep -c .)"
[ "$(echo "$workers" | grep -c .)" = 2 ] || fail "expected two workers"
for c in $workers; do
  wait_for 120 podman healthcheck run "$c" || { podman logs --tail 30 "$c"; fail "worker $c unhealthy"; }
  echo "worker $(podman inspect "$c" --format '{{.Name}}'): HEALTHCHECK healthy; $(podman logs "$c" 2>&1 | grep -o '"role":"worker"[^}]*"msg":"waygate is up"' | head -1)"
done
echo
echo "container-check: every step passed"
