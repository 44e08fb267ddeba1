#!/usr/bin/env bash
# validate on dedicated cores (the paper's one service per core): the four
# apps, four reductions, 2 reps of 3 s and no adaptive repeats (the default
# --max-reps 6 does not fit 125 s an app), the product binary.
set -u
# Run on a lent 16-core machine with results/devbin.tgz carried, built by:
#   CGO_ENABLED=0 go build -ldflags="-s -w" -o /tmp/devbin/ ./apps/... ./cmd/slowpoke
#   tar czf results/devbin.tgz -C /tmp/devbin .
cd "$(dirname "$0")/../.."
mkdir -p bin && tar xzf results/devbin.tgz -C bin
echo "nproc=$(nproc) kernel=$(uname -r) rtprio=$(ulimit -r) uid=$(id -u)"
start=$(date +%s)
for a in "hotel profile" "boutique cart" "social home-timeline" "movie movie-reviews"; do
  set -- $a
  t0=$(date +%s)
  timeout -s INT -k 5 125 bin/slowpoke validate -f apps/$1/app.yaml --target $2 \
    --placement dedicated --reps 2 --max-reps 2 --duration 3s \
    --reduce 250us,500us,750us,1000us --out "$OUT/$1" > "$OUT/$1.log" 2>&1
  echo "== $1/$2 rc=$? $(( $(date +%s) - t0 ))s"
  grep -vE '^\[|^$' "$OUT/$1.log" | tail -16
  rm -rf "$OUT/$1/logs" "$OUT/$1/"*.html 2>/dev/null
done
echo "total $(( $(date +%s) - start ))s"
