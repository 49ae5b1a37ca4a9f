#!/usr/bin/env bash
# `cmake --install` to a prefix, the prefix moved elsewhere, and everything run from the
# moved copy: plait finds its plugins and bundles beside itself, trains, and an
# out-of-tree plugin builds with find_package(plait) through CMAKE_PREFIX_PATH alone and
# is loaded. Nothing of the build tree may be named by the installed files.
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "install test: $*"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
mv "$work/prefix" "$work/moved"
p="$work/moved"
for f in bin/plait lib/cmake/plait/plaitConfig.cmake lib/cmake/plait/PlaitPlugin.cmake include/plait/sdk/sdk.hpp \
         share/plait/bundles/zero3-offload.toml share/plait/configs/quickstart.toml share/doc/plait/sdk/README.md \
         share/doc/plait/sdk/examples/ema/CMakeLists.txt; do
  test -e "$p/$f" || fail "the install has no $f"
done
for plugin in single ddp zero fsdp gloo nccl cpu megatron gpipe 1f1b interleaved-1f1b; do
  test -e "$p/lib/plait/plugins/libplait_plugin_$plugin.so" || fail "the install has no plugin $plugin"
done
if grep -rlI --exclude='*.so' "$build" "$p" >"$work/names-build.txt"; then
  fail "installed files name the build tree: $(cat "$work/names-build.txt")"
fi
for so in "$p"/bin/plait "$p"/lib/plait/plugins/*.so; do
  if readelf -d "$so" | grep -E 'R(UN)?PATH' | grep -q "$build"; then fail "$so has the build tree in its RPATH"; fi
done

"$p/bin/plait" --version >"$work/version.log"
"$p/bin/plait" plugins >"$work/plugins.log"
grep -q "$p/lib/plait/plugins/libplait_plugin_ddp.so" "$work/plugins.log" || fail "plait plugins does not list the moved plugins"
"$p/bin/plait" bundles >"$work/bundles.log"
grep -q "$p/share/plait/bundles/zero3-offload.toml" "$work/bundles.log" || fail "plait bundles does not list the moved bundles"
"$p/bin/plait" run "$p/share/plait/configs/quickstart.toml" --steps 3 --out "$work/run" >"$work/run.log" 2>&1 \
  || { cat "$work/run.log"; fail "the moved plait did not train"; }
test "$(wc -l <"$work/run/metrics.jsonl")" -eq 3 || fail "the moved plait's run has no 3 steps of metrics"

# An out-of-tree plugin, against the moved install only.
cp -r "$p/share/doc/plait/sdk/examples/ema" "$work/ema"
cmake -S "$work/ema" -B "$work/ema-build" -G Ninja -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE=Release \
  >"$work/ema-configure.log" 2>&1 || { cat "$work/ema-configure.log"; fail "the example does not configure against the install"; }
grep -q "$p/lib/cmake/plait" "$work/ema-build/CMakeCache.txt" || fail "the example found a plait other than the moved install"
cmake --build "$work/ema-build" >"$work/ema-build.log" 2>&1 || { cat "$work/ema-build.log"; fail "the example does not build"; }
PLAIT_PLUGIN_PATH="$work/ema-build" "$p/bin/plait" run "$p/share/plait/configs/gpt2-tiny-single.toml" --steps 2 \
  --out "$work/ema-run" --set parallel.data=example-ema >"$work/ema-run.log" 2>&1 \
  || { cat "$work/ema-run.log"; fail "the moved plait did not train with the example plugin"; }
grep -q '"example-ema.ema_distance"' "$work/ema-run/metrics.jsonl" || fail "no example-ema.ema_distance in metrics.jsonl"
echo "installed, moved to $p, ran plait from there, and built and loaded a plugin against it"
