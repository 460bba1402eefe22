#!/usr/bin/env bash
# Installs a built nvfp4-verify tree into a fresh temporary prefix, checks the installed layout,
# then configures, builds and runs the consumer project beside this script against it with
# find_package(nvfp4verify CONFIG REQUIRED) and CMAKE_PREFIX_PATH=<prefix>. Removes the prefix
# and the consumer's build on exit. Exits non-zero as soon as a step fails.
#
#   tests/consumer/run-consumer-test.sh BUILD_DIR [CMAKE_ARG...]
#
# CMAKE_ARG... go to the consumer's configure step (CTest passes the generator, the compiler, the
# build type and the expected package version). Environment: CMAKE (default: cmake on the PATH),
# NVFP4_INSTALL_CONFIG (--config for a multi-config build tree), NVFP4_KEEP_CONSUMER_TEST=1 keeps
# the temporary folder for inspection.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [CMAKE_ARG...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cmake=${CMAKE:-cmake}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nvfp4verify-consumer.XXXXXX")
cleanup() {
  if [ "${NVFP4_KEEP_CONSUMER_TEST:-0}" = 1 ]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
prefix=$tmp/prefix

step() { echo "== $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# Runs a command with its output in a log, printed only when the command fails.
logged() {
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    fail "$*"
  fi
}

step "cmake --install $build --prefix $prefix"
logged "$tmp/install.log" "$cmake" --install "$build" --prefix "$prefix" ${NVFP4_INSTALL_CONFIG:+--config "$NVFP4_INSTALL_CONFIG"}
echo "installed $(grep -c '^-- Installing' "$tmp/install.log") files"

step "installed layout"
config=$(find "$prefix" -path '*/cmake/nvfp4verify/nvfp4verifyConfig.cmake' | head -n 1)
[ -n "$config" ] || fail "no cmake/nvfp4verify/nvfp4verifyConfig.cmake under $prefix"
config_dir=$(dirname "$config")
for f in nvfp4verifyConfigVersion.cmake nvfp4verifyTargets.cmake; do
  [ -f "$config_dir/$f" ] || fail "missing $config_dir/$f"
done
for h in reference/quantize.h reference/profiles.h reference/dequantize.h io/safetensors.h cases/case.h compare/diff.h; do
  [ -f "$prefix/include/nvfp4verify/$h" ] || fail "missing header include/nvfp4verify/$h"
done
[ -f "$prefix/include/nvfp4_verify/plugin.h" ] || fail "missing header include/nvfp4_verify/plugin.h"
[ -x "$prefix/bin/nvfp4-verify" ] || fail "missing bin/nvfp4-verify"
# The package must be relocatable: nothing in it may point back into the source or build tree.
if grep -rlF -e "$source_dir/" -e "$build" "$config_dir"; then
  fail "the installed package refers to the source or build tree (files above)"
fi
echo "package files in ${config_dir#"$prefix"/}: $(cd "$config_dir" && echo *)"
version=$("$prefix/bin/nvfp4-verify" --version) || fail "installed bin/nvfp4-verify --version failed"
echo "bin/nvfp4-verify --version: $version"

step "configure the consumer (CMAKE_PREFIX_PATH=$prefix)"
logged "$tmp/configure.log" "$cmake" -S "$here" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON "$@"
grep -F 'nvfp4verify' "$tmp/configure.log" || true
found_dir=$(sed -n 's/^nvfp4verify_DIR:PATH=//p' "$tmp/build/CMakeCache.txt")
case "$found_dir" in
  "$prefix"/*) ;;
  *) fail "find_package(nvfp4verify) found '$found_dir', not the copy installed in $prefix" ;;
esac

step "build the consumer"
logged "$tmp/build.log" "$cmake" --build "$tmp/build" ${NVFP4_INSTALL_CONFIG:+--config "$NVFP4_INSTALL_CONFIG"}

[ -n "$(find "$tmp/build" -type f -name 'libnvfp4verify_consumer_plugin.so')" ] || fail "the consumer's plugin was not built"

step "run the consumer"
exe=$(find "$tmp/build" -type f -name nvfp4verify_consumer -perm -u+x | head -n 1)
[ -n "$exe" ] || fail "the consumer's executable was not built"
"$exe" || fail "the consumer's checks failed"
# Built only when the package has the CUDA device libraries; skips, saying so, without a GPU.
device_exe=$(find "$tmp/build" -type f -name nvfp4verify_consumer_device -perm -u+x | head -n 1)
if [ -n "$device_exe" ]; then
  step "run the device consumer"
  "$device_exe" || fail "the device consumer's check failed"
fi
echo "PASS"
