#!/usr/bin/env bash
# Installs everything tdslc needs to build and test on a fresh Debian 12 machine.
# Idempotent: packages already present are left alone.
set -euo pipefail

# python3-venv, -setuptools and -wheel: the Python package's install test
# (pip install --no-build-isolation into a venv, no network needed).
pkgs=(cmake ninja-build g++ python3 python3-venv python3-setuptools python3-wheel
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

# A python3 that is not Debian's (pyenv, conda) lacks the packages above:
# the package's install test builds with this python3's setuptools and wheel.
if ! python3 -c "import setuptools, wheel, venv" 2>/dev/null; then
  echo "setup: installing setuptools and wheel for $(command -v python3)"
  python3 -m pip install --quiet setuptools wheel
fi

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: warning: the CUDA toolkit (nvcc) was not found; tdslc builds without it," \
       "but the emitted CUDA cannot be compiled" >&2
fi
echo "setup: dependencies present"
