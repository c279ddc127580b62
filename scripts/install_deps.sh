#!/usr/bin/env bash
# Install the Debian packages the tests need, only when a tool is missing (a no-op otherwise):
#   kcat                  -> kcat (Debian's is built with SSL, SASL PLAIN/SCRAM/OAUTHBEARER: the
#                            security tests use it as is)
#   java (runtime)        -> default-jre-headless
#   javac (compiler)      -> default-jdk-headless
#   chromium              -> chromium (the console's browser tests drive it with Playwright,
#                            executable_path=/usr/bin/chromium; no browser download)
# Runs `apt-get update` once, then `apt-get install -y`. Works as root (no sudo needed);
# as another user it uses sudo when there is one.
set -euo pipefail

missing=()
command -v kcat  >/dev/null 2>&1 || missing+=(kcat)
command -v java  >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
[ -x /usr/bin/chromium ] || missing+=(chromium)

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

for tool in kcat java javac chromium; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install_deps: $tool still missing after install" >&2; exit 1; }
done
