# Sourced by the install tests: a fresh work folder ($3) holding `cmake --install` of the
# build ($2) moved from where it was installed to $work/moved (so nothing may depend on
# the install path), and fail() that names the test ($test_name).
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$test_name: $*"; exit 1; }
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
mv "$work/prefix" "$work/moved"
