#!/usr/bin/env bash
# Installs dependencies, builds tdslc and runs every test (lit suites and
# unit tests). This is the README's second command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
ctest --test-dir build --output-on-failure
