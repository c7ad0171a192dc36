#!/usr/bin/env bash
# same-wheels.sh WHEELHOUSE_A WHEELHOUSE_B [EXAMPLE ...] — builds every example (or those named)
# with each backend wheel (pip wheel with build isolation, SOURCE_DATE_EPOCH fixed, the same
# folder and a fresh build-dir each time) and prints one line per wheel: same or differs, with
# the differing members. For restructurings that must not change what a build writes.
# SAME_WHEELS_KEEP_A=1 reuses side A's wheels from an earlier run (build the baseline once).
# Exit status 1 when any wheel differs or is missing on one side.
set -euo pipefail
cd "$(dirname "$0")/../.."
A=$(cd "$1" && pwd); B=$(cd "$2" && pwd); shift 2
EXAMPLES=("$@")
[[ ${#EXAMPLES[@]} -gt 0 ]] || EXAMPLES=($(ls examples))
PY=${PYTHON:-python3}
WORK=${SAME_WHEELS_WORK:-$PWD/.cache/same-wheels}
export SOURCE_DATE_EPOCH=1700000000 PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$PWD/.cache/pip}
status=0
for ex in "${EXAMPLES[@]}"; do
  for side in a b; do
    house=$A; [[ $side == b ]] && house=$B
    if [[ $side == a && ${SAME_WHEELS_KEEP_A:-0} == 1 ]] && compgen -G "$WORK/a/$ex/*.whl" >/dev/null; then
      continue
    fi
    rm -rf "$WORK/src/$ex" "$WORK/$side/$ex"; mkdir -p "$WORK/src" "$WORK/$side/$ex"
    cp -r "examples/$ex" "$WORK/src/$ex"
    if ! PIP_FIND_LINKS=$house "$PY" -m pip wheel -q --no-deps -w "$WORK/$side/$ex" "$WORK/src/$ex" \
        >"$WORK/$side/$ex.log" 2>&1; then
      echo "$ex: build failed with $house (log: $WORK/$side/$ex.log)"; status=1
    fi
  done
  for wa in "$WORK/a/$ex"/*.whl; do
    [[ -e $wa ]] || continue
    wb="$WORK/b/$ex/$(basename "$wa")"
    if [[ ! -e $wb ]]; then echo "$ex: $(basename "$wa") missing with B"; status=1
    elif cmp -s "$wa" "$wb"; then echo "$ex: same $(basename "$wa") $(sha256sum <"$wa" | cut -c1-16)"
    else
      echo "$ex: DIFFERS $(basename "$wa")"; status=1
      "$PY" - "$wa" "$wb" <<'PYEOF'
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
names = sorted(set(a.namelist()) | set(b.namelist()))
for n in names:
    da = a.read(n) if n in a.namelist() else None
    db = b.read(n) if n in b.namelist() else None
    if da != db:
        print(f"    member differs: {n}")
PYEOF
    fi
  done
done
exit $status
