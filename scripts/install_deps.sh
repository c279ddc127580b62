#!/usr/bin/env bash
# Install the Debian packages the tests need, only when a tool is missing (a no-op otherwise):
#   kcat                  -> kcat (Debian's is built with SSL, SASL PLAIN/SCRAM/OAUTHBEARER: the
#                            security tests use it as is)
#   java (runtime)        -> default-jre-headless
#   javac (compiler)      -> default-jdk-headless
#   podman, runc          -> podman, runc (tests/container: Debian's runc as podman's runtime)
#   debootstrap           -> debootstrap (the containers' base image: scripts/container_base.sh)
#   podman-compose        -> podman-compose (docker/compose.yaml and docker/sasl-ssl under podman)
#   CNI dnsname plugin    -> golang-github-containernetworking-plugin-dnsname (compose services
#                            reach each other by name on podman's CNI networks)
#   mvn                   -> maven (tests/jvm: Apache Kafka, Streams, Connect and the connectors
#                            are resolved from Maven coordinates by `make jvm`)
#   postgres (server)     -> postgresql (tests/connect: Debezium's source database, a throwaway
#                            cluster started by the tests with wal_level=logical)
#   chromium              -> chromium (the console's browser tests drive it with Playwright,
#                            executable_path=/usr/bin/chromium; no browser download)
# Runs `apt-get update` once, then `apt-get install -y`. Works as root (no sudo needed);
# as another user it uses sudo when there is one.
set -euo pipefail

missing=()
command -v kcat  >/dev/null 2>&1 || missing+=(kcat)
command -v java  >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc  >/dev/null 2>&1 || missing+=(runc)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v podman-compose >/dev/null 2>&1 || missing+=(podman-compose)
[ -x /usr/lib/cni/dnsname ] || missing+=(golang-github-containernetworking-plugin-dnsname)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null || missing+=(postgresql)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo -n)
else
  echo "install_deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "install_deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"

for tool in kcat java javac mvn chromium podman runc debootstrap podman-compose; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install_deps: $tool still missing after install" >&2; exit 1; }
done
compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null || { echo "install_deps: PostgreSQL still missing after install" >&2; exit 1; }
