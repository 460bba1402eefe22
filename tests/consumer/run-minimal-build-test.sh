#!/usr/bin/env bash
# Configures and builds nvfp4-verify the way a library user does: BUILD_TESTING=OFF, with
# GoogleTest and RapidCheck made unfindable (CMAKE_DISABLE_FIND_PACKAGE_*), and without CUDA to
# keep it short. Checks that the library layers and the CLI build, that the CLI runs, and that the
# campaign commands, which need RapidCheck, fail with one clear line. Removes its build on exit.
#
#   tests/consumer/run-minimal-build-test.sh [CMAKE_ARG...]     (CTest: MinimalBuild.WithoutTestDependencies)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cmake=${CMAKE:-cmake}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nvfp4verify-minimal.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

echo "== configure: BUILD_TESTING=OFF, GTest and rapidcheck disabled, no CUDA"
if ! "$cmake" -S "$source_dir" -B "$tmp/build" -DBUILD_TESTING=OFF -DNVFP4_ENABLE_CUDA=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON "$@" >"$tmp/configure.log" 2>&1; then
  cat "$tmp/configure.log"
  fail "configure without GoogleTest and RapidCheck"
fi
grep -F 'RapidCheck not found' "$tmp/configure.log" || fail "configure did not report the missing RapidCheck"

echo "== build"
if ! "$cmake" --build "$tmp/build" --parallel "$(nproc)" >"$tmp/build.log" 2>&1; then
  tail -n 40 "$tmp/build.log"
  fail "build without GoogleTest and RapidCheck"
fi
for lib in reference/libnvfp4_reference.a io/libnvfp4_io.a cases/libnvfp4_cases.a compare/libnvfp4_compare.a; do
  [ -f "$tmp/build/$lib" ] || fail "missing $lib"
done
[ ! -e "$tmp/build/fuzz" ] || fail "fuzz/ was configured although RapidCheck is disabled"

cli=$tmp/build/cli/nvfp4-verify
echo "== $("$cli" --version)"
"$cli" ops >/dev/null || fail "nvfp4-verify ops"
set +e
message=$("$cli" fuzz --time 1s 2>&1)
status=$?
set -e
echo "fuzz -> exit $status: $message"
[ "$status" = 2 ] || fail "fuzz without RapidCheck exited $status, expected 2"
case "$message" in
  *"built without RapidCheck"*) ;;
  *) fail "fuzz without RapidCheck did not say why" ;;
esac
echo "PASS"
