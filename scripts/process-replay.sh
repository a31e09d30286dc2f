#!/usr/bin/env bash
# Process replay: emits the loop IR, the CUDA and the C header of every
# kernel file in dsl/examples and bench/suite with tdslc built at a base
# commit and with the working tree's build, and diffs the two. A refactor
# that should not change output must replay clean; one that should says
# what changed (paste the summary into the commit body).
#
#   scripts/process-replay.sh [BASE] [-- EXTRA TDSLC FLAGS]
#
# BASE defaults to HEAD (the last commit: replays uncommitted work). The
# base is built once per commit in build-replay/<sha>/; the working tree's
# tdslc is build/bin/tdslc (built here first). The emitted files go to
# build-replay/out/{base,new}/ and the full diff to build-replay/out/diff.
# Exit status: 0 when identical, 1 when something differs, 2 on an error.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

base=HEAD
if [[ $# -gt 0 && $1 != -- ]]; then base=$1; shift; fi
[[ ${1:-} == -- ]] && shift
extra=("$@")

sha=$(git rev-parse --verify "$base^{commit}") || { echo "replay: no commit '$base'" >&2; exit 2; }
work=$root/build-replay
src=$work/src-$sha
bld=$work/$sha
mkdir -p "$work"

# The base: a detached worktree built in its own folder (kept for reuse).
if [[ ! -x $bld/bin/tdslc ]]; then
  if [[ ! -d $src ]]; then
    git worktree add --detach -f "$src" "$sha" >/dev/null 2>&1 ||
      { echo "replay: cannot check out $sha" >&2; exit 2; }
  fi
  echo "replay: building the base ($sha)" >&2
  cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
  cmake --build "$bld" --target tdslc >/dev/null
fi
echo "replay: building the working tree" >&2
[[ -f build/build.ninja ]] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tdslc >/dev/null

# emit TDSLC OUTDIR: every kernel file at -O2 and -O0, each stage the
# driver writes as text. A failing emission is recorded, not fatal: its
# message is part of what is compared.
emit() {
  local tdslc=$1 out=$2
  rm -rf "$out"; mkdir -p "$out"
  for f in dsl/examples/*.tdsl bench/suite/*.tdsl; do
    local name=${f%.tdsl}; name=${name//\//_}
    for o in 2 0; do
      for kind in ir loops cuda header; do
        [[ $kind == ir && $o == 0 ]] && continue
        "$tdslc" "$f" --emit=$kind -O$o "${extra[@]}" >"$out/$name.O$o.$kind" 2>&1 ||
          echo "(exit status $?)" >>"$out/$name.O$o.$kind"
      done
    done
  done
}

emit "$bld/bin/tdslc" "$work/out/base"
emit "$root/build/bin/tdslc" "$work/out/new"

cd "$work/out"
if diff -r -u base new >diff; then
  n=$(ls base | wc -l)
  echo "replay: identical to $sha (${n} files)"
  exit 0
fi
echo "replay: differs from $sha; full diff in build-replay/out/diff"
diff -rq base new | sed 's/^Files base\/\([^ ]*\) and .* differ$/  changed: \1/; s/^Only in \(.*\): /  only in \1: /'
echo "  lines: $(grep -c '^-[^-]' diff || true) removed, $(grep -c '^+[^+]' diff || true) added"
exit 1
