#!/usr/bin/env bash
# Fuzzes the .tdsl front end for SECONDS seconds (default 60) with libFuzzer:
#   test/fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
# Builds build-fuzz/frontend-fuzzer first if any frontend/ or ir/ source is
# newer (clang++-14 -fsanitize=fuzzer,address,undefined; not part of the
# CMake build, which uses g++). The corpus starts from dsl/examples/*.tdsl,
# test/frontend/*.tdsl and test/fuzz/findings/*; what the fuzzer learns
# stays in build-fuzz/corpus. Exits 0 only if nothing was found; a finding
# is left in build-fuzz/findings/ (reproduce: build-fuzz/frontend-fuzzer FILE)
# and belongs, minimized, in test/fuzz/findings/ with a lit test.
# Exit 77 (skipped) when clang++-14 or libclang-rt-14-dev is missing
# (scripts/setup.sh installs both).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
shift || true
out=${TDSL_FUZZ_DIR:-$root/build-fuzz}
cxx=${CLANGXX:-clang++-14}
llvm=/usr/lib/llvm-14

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: skipped: $cxx not found (scripts/setup.sh installs clang-14)"; exit 77
fi
if ! ls "$llvm"/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: skipped: libFuzzer runtime missing (scripts/setup.sh installs libclang-rt-14-dev)"
  exit 77
fi

mkdir -p "$out/obj" "$out/corpus" "$out/findings"
flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -I"$root" -isystem "$llvm/include"
       -fsanitize=address,undefined -fno-sanitize-recover=all
       -D_GNU_SOURCE -D__STDC_CONSTANT_MACROS -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS)
bin=$out/frontend-fuzzer
sources=("$root"/frontend/*.cpp "$root"/ir/*.cpp "$root"/test/fuzz/FrontendFuzzer.cpp)
newest_header=$(ls -t "$root"/frontend/*.h "$root"/ir/*.h | head -1)

# Compile what is out of date, two at a time (the machine is shared).
objs=()
stale=()
for src in "${sources[@]}"; do
  obj=$out/obj/$(basename "$(dirname "$src")")_$(basename "${src%.cpp}").o
  objs+=("$obj")
  if [[ ! -f $obj || $src -nt $obj || $newest_header -nt $obj ]]; then stale+=("$src:$obj"); fi
done
if ((${#stale[@]})); then
  echo "fuzz: compiling ${#stale[@]} file(s)"
  printf '%s\n' "${stale[@]}" | xargs -P 2 -I{} bash -c \
    'src=${1%%:*}; obj=${1#*:}; "$0" "${@:2}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"' \
    "$cxx" {} "${flags[@]}"
fi
relink=0
[[ -f $bin ]] || relink=1
for obj in "${objs[@]}"; do [[ $obj -nt $bin ]] && relink=1; done
if ((relink)); then
  echo "fuzz: linking $bin"
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "${objs[@]}" -o "$bin" \
    "$llvm/lib/libLLVMSupport.a" "$llvm/lib/libLLVMDemangle.a" -lz -ltinfo -lpthread -ldl
fi

seeds=("$root"/dsl/examples/*.tdsl "$root"/test/frontend/*.tdsl)
shopt -s nullglob
seeds+=("$root"/test/fuzz/findings/*)
cp -n "${seeds[@]}" "$out/corpus/" 2>/dev/null || true
for f in "${seeds[@]}"; do [[ -f $out/corpus/$(basename "$f") ]] || cp "$f" "$out/corpus/"; done

echo "fuzz: fuzzing for ${seconds}s"
set +e
# -malloc_limit_mb catches one input asking for too much memory. The RSS
# limit is for the whole process, and libFuzzer's own corpus and feature
# tables grow with time (a one-hour run reached 2 GB with no tdslc fault:
# the input it blamed parses in 1 ms and 35 MB), so it grows with the run.
rss_mb=$((seconds > 600 ? 8192 : 2048))
"$bin" "$out/corpus" -max_total_time="$seconds" -max_len=4096 -timeout=5 \
  -rss_limit_mb="$rss_mb" -malloc_limit_mb=2048 -dict="$root/test/fuzz/tdsl.dict" \
  -artifact_prefix="$out/findings/" -print_final_stats=1 "$@" 2>&1 | tail -n 80
rc=${PIPESTATUS[0]}
set -e
if ((rc != 0)); then
  echo "fuzz: FINDING (exit $rc); reproduce with: $bin FILE, FILE from $out/findings/"
  exit 1
fi
echo "fuzz: no findings"
