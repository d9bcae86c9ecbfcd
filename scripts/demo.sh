#!/usr/bin/env bash
# The demo behind `make demo`: distributed ALS on 4 localities of this
# machine with tracing on, then the profile read back from the trace and
# where the trace files are.
#
#   bash scripts/demo.sh [RATINGS.csv]
#
# Without a ratings file it generates a small MovieLens-format one
# (RATINGS_SIZE users,items,density; default 3000,2000,0.02). Everything
# goes to DEMO_DIR (default out/demo): ratings.csv, factors/, trace/.
# LOCALITIES (4) and ITERATIONS (5) change the run. Expects `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
DEMO_DIR=${DEMO_DIR:-out/demo}
LOCALITIES=${LOCALITIES:-4}
ITERATIONS=${ITERATIONS:-5}
RATINGS_SIZE=${RATINGS_SIZE:-3000,2000,0.02}
ratings=${1:-}

mkdir -p "$DEMO_DIR"
if [ -z "$ratings" ]; then
	ratings=$DEMO_DIR/ratings.csv
	echo "== generating $ratings: $RATINGS_SIZE (users, items, density), MovieLens format"
	"$BIN/als" --synthetic "$RATINGS_SIZE" --make-ratings "$ratings"
fi
trace=$DEMO_DIR/trace
rm -rf "$trace"

echo "== tessera run -n $LOCALITIES als --ratings $ratings (traced into $trace)"
TESSERA_TRACE=$trace TESSERA_TRACE_FORMAT=otf2,perfetto \
	"$BIN/tessera" run -n "$LOCALITIES" "$BIN/als" --ratings "$ratings" \
	--iterations "$ITERATIONS" --output "$DEMO_DIR/factors"

echo
echo "== tessera trace summary $trace"
"$BIN/tessera" trace summary "$trace"

anchor=$(ls "$trace"/*.otf2)
echo
echo "== the trace of this run"
echo "OTF2 archive:  $anchor"
echo "Perfetto JSON: $trace/trace.json"
echo "factors:       $DEMO_DIR/factors/X.csv, $DEMO_DIR/factors/Y.csv"
echo
echo "Open it with:"
echo "  otf2-print $anchor | less             # every event (Debian otf2-tools)"
echo "  Traveler: load $anchor                # task timelines, utilisation, histograms"
echo "  Perfetto: open https://ui.perfetto.dev and drop $trace/trace.json on it"
echo "  $BIN/tessera trace summary|check $trace   # profile; consistency check"
