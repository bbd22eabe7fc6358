#!/bin/sh
# Rebuilds ../labextension (the built extension that pip installs) from index.js. Needs node >= 18
# and npm (the npm registry reachable); learners, Binder and CI never run it. npm installs the
# builder (hundreds of MB, Python files among them) into a scratch folder, never inside course_lib.
set -e
here=$(cd "$(dirname "$0")" && pwd)
work=${TMPDIR:-/tmp}/course-lib-labextension-build   # one fixed folder: the same source builds the same files
rm -rf "$work" && mkdir -p "$work"
cp "$here/package.json" "$here/index.js" "$work/"
cd "$work"
npm install --no-audit --no-fund
npm run build                                  # writes $work/labextension (package.json's outputDir)
rm -rf "$here/../labextension"
cp -r labextension "$here/../labextension"
cd / && rm -rf "$work"
echo "built $(dirname "$here")/labextension"
