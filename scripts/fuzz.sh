#!/usr/bin/env bash
# Reproduces the fuzzing runs of issue 6 (not part of CI: too slow). Needs a nightly toolchain
# and cargo-fuzz (`cargo install cargo-fuzz --locked`).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET ...]    # default: 600 s each, targets config and elf
#
# Each target runs on fuzz/corpus/<target> (kept in the repo, minimised) plus the hand-made
# seeds in fuzz/seeds/<target> (examples' pyproject files; small real ELF files), under nice.
# New interesting inputs land in the corpus, which is minimised again at the end (`cargo fuzz
# cmin`). A crash stops the run and leaves its input in fuzz/artifacts/<target>/; copy it to
# tests/fuzz-regressions/<target>/ and the regression test (tests/fuzz_regressions.rs) replays
# it. The last lines of each run (executions, coverage) go to fuzz/logs/<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(config elf)
mkdir -p fuzz/logs
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  case $t in
    config) maxlen=4096 ;;
    elf) maxlen=16384 ;;
    *) maxlen=4096 ;;
  esac
  echo "=== fuzz $t for ${SECS}s" >&2
  nice -n 15 cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$SECS" -max_len="$maxlen" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 2>&1 | tee "fuzz/logs/$t.full.log" | grep -E '^#[0-9]+ +(INITED|DONE|pulse)|^Done|^stat::|SUMMARY|panicked|ERROR' >&2 || true
  grep -E '^(#[0-9]+ +DONE|Done|stat::)|panicked|SUMMARY' "fuzz/logs/$t.full.log" > "fuzz/logs/$t.log" || true
  rm -f "fuzz/logs/$t.full.log.gz"; gzip -f "fuzz/logs/$t.full.log"
  if grep -q 'panicked\|SUMMARY' "fuzz/logs/$t.log"; then
    echo "!!! $t found a crash; inputs in fuzz/artifacts/$t/" >&2
  fi
  echo "=== minimise corpus of $t" >&2
  nice -n 15 cargo +nightly fuzz cmin --fuzz-dir fuzz "$t" "fuzz/corpus/$t" -- -max_len="$maxlen" -rss_limit_mb=2048 -timeout=10 >/dev/null 2>&1
  echo "    $(ls "fuzz/corpus/$t" | wc -l) files, $(du -sh "fuzz/corpus/$t" | cut -f1)" >&2
done
