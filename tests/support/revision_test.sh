#!/usr/bin/env bash
# cmake/revision.cmake (the revision `nvfp4-verify --version` prints): "release" for a source tree
# that is not the project's own git checkout (here a folder inside another repository, as a source
# archive unpacked there would be), "git <commit>" for the checkout, and the file left untouched
# when the revision did not change (so that a rebuild compiles nothing).
#   tests/support/revision_test.sh SOURCE_DIR        (CTest: Revision.ReleaseOutsideTheCheckoutCommitInside)
set -euo pipefail
source_dir=$1
cmake=${CMAKE:-cmake}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nvfp4-revision.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

git init -q "$tmp/other"
mkdir "$tmp/other/archive"
"$cmake" -DSOURCE_DIR="$tmp/other/archive" -DOUTPUT="$tmp/release.cpp" -P "$source_dir/cmake/revision.cmake"
grep -qF 'kRevision[] = "release";' "$tmp/release.cpp" || fail "not \"release\" inside another repository: $(cat "$tmp/release.cpp")"

if commit=$(git -C "$source_dir" rev-parse --short=12 HEAD 2>/dev/null); then
  "$cmake" -DSOURCE_DIR="$source_dir" -DOUTPUT="$tmp/git.cpp" -P "$source_dir/cmake/revision.cmake"
  grep -qE "kRevision\[\] = \"git $commit(-dirty)?\";" "$tmp/git.cpp" || fail "not git $commit: $(cat "$tmp/git.cpp")"
  touch -d 2000-01-01 "$tmp/git.cpp"
  "$cmake" -DSOURCE_DIR="$source_dir" -DOUTPUT="$tmp/git.cpp" -P "$source_dir/cmake/revision.cmake"
  [ "$(date -r "$tmp/git.cpp" +%Y)" = 2000 ] || fail "the unchanged revision was rewritten"
  echo "revision.cmake: release outside the checkout, git $commit inside, unchanged file untouched"
else
  echo "revision.cmake: release outside the checkout (the source tree is not a git checkout)"
fi
