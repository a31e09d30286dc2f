#!/usr/bin/env bash
# Installs everything tdslc needs to build and test on a fresh Debian 12 machine.
# Idempotent: packages already present are left alone.
set -euo pipefail

pkgs=(cmake ninja-build g++ python3
      llvm-14-dev llvm-14-tools libfmt-dev googletest libgtest-dev
      zlib1g-dev libtinfo-dev libxml2-dev libz3-dev
      clang-14 libclang-rt-14-dev)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: warning: the CUDA toolkit (nvcc) was not found; tdslc builds without it," \
       "but the emitted CUDA cannot be compiled" >&2
fi
echo "setup: dependencies present"
