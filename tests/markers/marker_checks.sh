#!/usr/bin/env bash
# Checks on the Argus marker header that need nvcc and cuobjdump (no GPU).
#
#   marker_checks.sh sass-identity NVCC CUOBJDUMP INCLUDE_DIRS WORKDIR SOURCE REGION...
#     Compiles SOURCE to an sm_90a cubin twice, with markers active and with
#     -DARGUS_DISABLE_MARKERS, and fails unless the SASS instructions are identical. Also compiles
#     SOURCE to PTX and fails unless every REGION has a `// @argus begin REGION` marker line and an
#     `// @argus end REGION` line. INCLUDE_DIRS is a ':'-separated list. With
#     ARGUS_MARKER_CLOBBER_REPORT=1 in the environment it also reports (without failing) whether a
#     "memory" clobber on the markers would change the SASS: the evidence for the header's choice.
#
#   marker_checks.sh sass-differs NVCC CUOBJDUMP INCLUDE_DIRS WORKDIR SOURCE
#     The opposite check, for the known perturbations in perturbation_*.cu: fails if the SASS is
#     identical with and without markers (then nvcc has improved and region.cuh's comment about
#     the cost of markers should be updated), or if SOURCE has no markers in the PTX.
#
#   marker_checks.sh expect-error NVCC INCLUDE_DIRS WORKDIR SOURCE MESSAGE
#     Fails unless compiling SOURCE fails and the diagnostics contain MESSAGE.
set -euo pipefail

die() { echo "marker_checks: $*" >&2; exit 1; }

include_flags() {
  local dirs=$1 flags=() d
  IFS=':' read -r -a parts <<<"$dirs"
  for d in "${parts[@]}"; do [[ -n $d ]] && flags+=("-I$d"); done
  printf '%s\n' "${flags[@]}"
}

# SASS instructions only: function headers and the instruction/encoding lines. Everything else
# in cuobjdump's listing (fatbin banners, file names, .headerflags) may differ between builds.
sass_instructions() {
  "$CUOBJDUMP" -sass "$1" | grep -E '^[[:space:]]*(Function : |/\*[0-9a-f]{4,}\*/|/\* 0x[0-9a-f]{16} \*/)' \
    | sed -E 's/[[:space:]]+/ /g'
}

mode=${1:-}
shift || true
case $mode in
  sass-identity | sass-differs)
    [[ $# -ge 5 ]] || die "usage: $mode NVCC CUOBJDUMP INCLUDE_DIRS WORKDIR SOURCE REGION..."
    NVCC=$1 CUOBJDUMP=$2 INCLUDES=$3 WORK=$4 SOURCE=$5
    shift 5
    regions=("$@")
    if [[ -z $CUOBJDUMP || $CUOBJDUMP == *NOTFOUND* || ! -x $CUOBJDUMP ]]; then
      echo "SKIP: cuobjdump not found ('$CUOBJDUMP'); scripts/setup.sh installs it"
      exit 77
    fi
    mkdir -p "$WORK"
    mapfile -t incs < <(include_flags "$INCLUDES")
    base=$(basename "$(dirname "$SOURCE")")_$(basename "$SOURCE" .cu)
    common=(-std=c++17 -O3 -arch=sm_90a "${incs[@]}")

    "$NVCC" "${common[@]}" -ptx "$SOURCE" -o "$WORK/$base.ptx"
    grep -q '// @argus begin ' "$WORK/$base.ptx" || die "$SOURCE: no marker comments in the PTX"
    for r in "${regions[@]}"; do
      grep -Eq "^[[:space:]]*// @argus begin $r( |\$)" "$WORK/$base.ptx" ||
        die "$SOURCE: no '// @argus begin $r' line in the PTX ($WORK/$base.ptx)"
      grep -Eq "^[[:space:]]*// @argus end $r\$" "$WORK/$base.ptx" ||
        die "$SOURCE: no '// @argus end $r' line in the PTX ($WORK/$base.ptx)"
    done

    "$NVCC" "${common[@]}" -cubin "$SOURCE" -o "$WORK/$base.markers.cubin"
    "$NVCC" "${common[@]}" -DARGUS_DISABLE_MARKERS -cubin "$SOURCE" -o "$WORK/$base.plain.cubin"
    sass_instructions "$WORK/$base.markers.cubin" >"$WORK/$base.markers.sass"
    sass_instructions "$WORK/$base.plain.cubin" >"$WORK/$base.plain.sass"
    count=$(grep -c '/\*[0-9a-f]\{4,\}\*/' "$WORK/$base.plain.sass" || true)
    [[ $count -gt 0 ]] || die "$SOURCE: no SASS instructions found (is cuobjdump working?)"
    if diff -u "$WORK/$base.plain.sass" "$WORK/$base.markers.sass" >"$WORK/$base.sass.diff"; then
      [[ $mode == sass-identity ]] ||
        die "$SOURCE: SASS is identical with and without markers, but this kernel documents a" \
          "known perturbation; if nvcc no longer perturbs it, update region.cuh and this test"
      echo "$SOURCE: $count SASS instructions, identical with and without markers;" \
        "${#regions[@]} regions checked in the PTX"
    else
      if [[ $mode == sass-identity ]]; then
        head -n 40 "$WORK/$base.sass.diff" >&2
        die "$SOURCE: the markers change the SASS (full diff: $WORK/$base.sass.diff)"
      fi
      echo "$SOURCE: SASS differs with markers, as documented" \
        "($(grep -c '^[-+] ' "$WORK/$base.sass.diff" || true) differing lines)"
    fi

    if [[ ${ARGUS_MARKER_CLOBBER_REPORT:-0} == 1 ]]; then
      "$NVCC" "${common[@]}" -DARGUS_DETAIL_MARKER_MEMORY_CLOBBER -cubin "$SOURCE" \
        -o "$WORK/$base.clobber.cubin"
      sass_instructions "$WORK/$base.clobber.cubin" >"$WORK/$base.clobber.sass"
      if diff -q "$WORK/$base.markers.sass" "$WORK/$base.clobber.sass" >/dev/null; then
        echo "  adding a \"memory\" clobber: SASS identical to the markers build"
      else
        changed=$(diff "$WORK/$base.markers.sass" "$WORK/$base.clobber.sass" | grep -c '^[<>]' || true)
        echo "  adding a \"memory\" clobber: SASS DIFFERS from the markers build" \
          "($changed differing lines)"
      fi
    fi
    ;;
  expect-error)
    [[ $# -eq 5 ]] || die "usage: expect-error NVCC INCLUDE_DIRS WORKDIR SOURCE MESSAGE"
    NVCC=$1 INCLUDES=$2 WORK=$3 SOURCE=$4 MESSAGE=$5
    mkdir -p "$WORK"
    mapfile -t incs < <(include_flags "$INCLUDES")
    log="$WORK/$(basename "$SOURCE" .cu).log"
    if "$NVCC" -std=c++17 -arch=sm_90a "${incs[@]}" -c "$SOURCE" -o "$WORK/should_not_exist.o" \
      >"$log" 2>&1; then
      die "$SOURCE compiled, but it must be rejected"
    fi
    grep -qF -- "$MESSAGE" "$log" || { cat "$log" >&2; die "$SOURCE failed without the message '$MESSAGE'"; }
    echo "$SOURCE: rejected with \"$MESSAGE\""
    ;;
  *)
    die "unknown mode '$mode' (sass-identity | sass-differs | expect-error)"
    ;;
esac
