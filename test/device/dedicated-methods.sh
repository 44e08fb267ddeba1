#!/usr/bin/env bash
# Counted calls against the CPU trigger on dedicated cores: the four apps,
# four reductions, 2 reps of 3 s, interleaved against one truth per point.
set -u
# Run on a lent 16-core machine with results/devbin.tgz carried, built by:
#   CGO_ENABLED=0 go build -ldflags="-s -w" -o /tmp/devbin/ ./apps/...
#   CGO_ENABLED=0 go build -tags lab -ldflags="-s -w" -o /tmp/devbin/slowpoke-lab ./cmd/slowpoke
#   tar czf results/devbin.tgz -C /tmp/devbin .
cd "$(dirname "$0")/../.."
mkdir -p bin && tar xzf results/devbin.tgz -C bin
echo "nproc=$(nproc) kernel=$(uname -r) rtprio=$(ulimit -r) uid=$(id -u)"
M=signal; chrt -f 1 true 2>/dev/null && M=cores; echo "method $M"
start=$(date +%s)
for a in "hotel profile" "boutique cart" "social home-timeline" "movie movie-reviews"; do
  set -- $a
  t0=$(date +%s)
  timeout -s INT -k 5 128 bin/slowpoke-lab bench methods -f apps/$1/app.yaml --target $2 \
    --methods $M,$M/cpu --reps 2 --duration 3s \
    --reduce 250us,500us,750us,1000us --out "$OUT/$1" > "$OUT/$1.log" 2>&1
  echo "== $1/$2 rc=$? $(( $(date +%s) - t0 ))s"
  grep -vE '^\[|^$' "$OUT/$1.log" | tail -22
  rm -rf "$OUT/$1/logs" "$OUT/$1/"*.html 2>/dev/null
done
echo "total $(( $(date +%s) - start ))s"
