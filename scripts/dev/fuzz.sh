#!/usr/bin/env bash
# Reproduces the fuzzing runs (not part of CI: too slow). Needs a nightly toolchain
# (`rustup toolchain install nightly`) and cargo-fuzz (`cargo install cargo-fuzz --locked`).
#
#   bash scripts/dev/fuzz.sh [SECONDS] [TARGET ...]    # default: 600 s each, targets config elf wheel
#
# Targets (fuzz/fuzz_targets/, each calling one door of src/fuzz_entry/):
#   config  pyproject.toml + `-C` settings + environment -> Config, arch lists, variant;
#   elf     an ELF file -> dynamic section, symbol versions, symbol tables, fatbin, audit;
#   wheel   a wheel (a zip, or described as text and zipped) -> `audit`, `size`, .dist-info.
# Each target runs on its corpus plus the seeds in fuzz/seeds/<target> (hand-made: the examples'
# pyproject files, small real ELF files) and fuzz/seeds/<target>-keys, with the dictionary
# fuzz/<target>.dict where there is one: the config target's per-key seeds and dictionary (and
# the wheel seeds) are generated from the key table by tests/fuzz_regressions.rs, rewritten here
# first (`CUDAWHEEL_BLESS_FUZZ=1`), so a new key reaches the fuzzer. Single-threaded, under nice;
# two targets may run at once (`bash scripts/dev/fuzz.sh 600 config & bash scripts/dev/fuzz.sh 600 elf`).
# The corpus is kept in the repo minimised (`cargo fuzz cmin`) and packed as
# fuzz/corpus/<target>.tar.gz (ELF inputs are mostly zeros: packed they stay small); it is
# unpacked into fuzz/corpus/<target>/ (ignored by git) before a run and packed again,
# deterministically, after it.
# A crash stops that target's run and leaves the input in fuzz/artifacts/<target>/: copy it to
# tests/fuzz-regressions/<target>/ and `cargo test` (tests/fuzz_regressions.rs) replays it.
# Executions and coverage go to fuzz/logs/<target>.log (full output: <target>.full.log.gz).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(config elf wheel)
mkdir -p fuzz/logs
CUDAWHEEL_BLESS_FUZZ=1 nice -n 19 cargo test --locked --test fuzz_regressions generated -q >&2
nice -n 19 cargo +nightly fuzz build --fuzz-dir fuzz >&2
for t in "${TARGETS[@]}"; do
  corpus=fuzz/corpus/$t
  if [ ! -d "$corpus" ] && [ -f "$corpus.tar.gz" ]; then
    mkdir -p "$corpus" && tar -xzf "$corpus.tar.gz" -C "$corpus"
  fi
  mkdir -p "$corpus"
  case $t in
    config) maxlen=4096 ;;
    elf) maxlen=16384 ;;
    wheel) maxlen=65536 ;;
    *) maxlen=4096 ;;
  esac
  seeds=("fuzz/seeds/$t")
  [ -d "fuzz/seeds/$t-keys" ] && seeds+=("fuzz/seeds/$t-keys")
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  echo "=== fuzz $t for ${SECS}s" >&2
  nice -n 19 cargo +nightly fuzz run --fuzz-dir fuzz "$t" "$corpus" "${seeds[@]}" -- \
    -max_total_time="$SECS" -max_len="$maxlen" -rss_limit_mb=2048 -timeout=10 \
    "${dict[@]}" -print_final_stats=1 > "fuzz/logs/$t.full.log" 2>&1 || true
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|Done|stat::)|panicked at|SUMMARY|^artifact_prefix|Test unit written' \
    "fuzz/logs/$t.full.log" > "fuzz/logs/$t.log" || true
  grep -E '^#[0-9]+[[:space:]]' "fuzz/logs/$t.full.log" | tail -1 >> "fuzz/logs/$t.log" || true
  gzip -f "fuzz/logs/$t.full.log"
  cat "fuzz/logs/$t.log" >&2
  if grep -q 'SUMMARY' "fuzz/logs/$t.log"; then
    echo "!!! $t found a crash; inputs in fuzz/artifacts/$t/" >&2
  fi
  echo "=== minimise corpus of $t" >&2
  nice -n 19 cargo +nightly fuzz cmin --fuzz-dir fuzz "$t" "$corpus" -- -max_len="$maxlen" \
    -rss_limit_mb=2048 -timeout=10 > "fuzz/logs/$t.cmin.log" 2>&1
  (cd "$corpus" && find . -type f -printf '%P\n' | LC_ALL=C sort |
    tar --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -T - | gzip -n9) > "$corpus.tar.gz"
  echo "    $(ls "$corpus" | wc -l) files, $(du -sb "$corpus" | cut -f1) bytes, packed $(stat -c %s "$corpus.tar.gz") bytes" >&2
done
