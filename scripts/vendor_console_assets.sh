#!/usr/bin/env bash
# Refresh the console's vendored front-end assets from the npm registry (pinned versions), with
# their licenses, into console/ui/static/vendor/ (package data: the console works offline).
#   htmx.org  -> htmx.min.js            (BSD Zero Clause)
#   uplot     -> uPlot.iife.min.js/.css (MIT)
set -euo pipefail
HTMX=2.0.11
UPLOT=1.6.32
dest="$(cd "$(dirname "$0")/.." && pwd)/console/ui/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "htmx.org@$HTMX" "uplot@$UPLOT" >/dev/null
mkdir htmx uplot
tar xzf "htmx.org-$HTMX.tgz" -C htmx
tar xzf "uplot-$UPLOT.tgz" -C uplot
mkdir -p "$dest"
cp htmx/package/dist/htmx.min.js "$dest/htmx.min.js"
cp htmx/package/LICENSE "$dest/htmx.LICENSE"
cp uplot/package/dist/uPlot.iife.min.js "$dest/uPlot.iife.min.js"
cp uplot/package/dist/uPlot.min.css "$dest/uPlot.min.css"
cp uplot/package/LICENSE "$dest/uPlot.LICENSE"
echo "vendored htmx $HTMX and uPlot $UPLOT into $dest"
