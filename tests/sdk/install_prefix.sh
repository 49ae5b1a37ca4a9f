#!/usr/bin/env bash
# `cmake --install` to a prefix, the prefix moved elsewhere, and everything run from the
# moved copy: plait finds its plugins and bundles beside itself, trains, and an
# out-of-tree plugin builds with find_package(plait) through CMAKE_PREFIX_PATH alone and
# is loaded. Nothing of the build tree may be named by the installed files.
test_name="install test"
source "$(dirname "$0")/moved_install.sh"
p="$work/moved"
for f in bin/plait lib/cmake/plait/plaitConfig.cmake lib/cmake/plait/PlaitPlugin.cmake include/plait/sdk/sdk.hpp \
         share/plait/bundles/zero3-offload.toml share/plait/configs/quickstart.toml share/plait/hardware/h100-sxm.toml \
         share/doc/plait/sdk/README.md \
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
export PLAIT_PLUGIN_PATH="$work/ema-build"
plait="$p/bin/plait" config="$p/share/plait/configs/gpt2-tiny-single.toml"
"$plait" plugins | grep -q "example-ema 0.1.0 (API " || fail "plait plugins does not list example-ema"
if "$plait" config validate "$config" --set parallel.data=example-ema --set example-ema.decy=0.5 >"$work/typo.log" 2>&1; then
  fail "a misspelt example-ema option was accepted"
fi
grep -q "did you mean 'decay'" "$work/typo.log" || { cat "$work/typo.log"; fail "no suggestion for a typo"; }
# It trains, reports its device figure, and its own state (the average) goes into the
# checkpoint and comes back on resume: a resumed run's steps 6-8 equal a straight 8-step
# run's, bit for bit.
common=(--set parallel.data=example-ema --set example-ema.decay=0.9 --set train.lr_schedule=constant)
"$plait" run "$config" --steps 8 --out "$work/straight" "${common[@]}" >"$work/straight.log" 2>&1 \
  || { cat "$work/straight.log"; fail "the moved plait did not train with the example plugin"; }
grep -q '"example-ema.ema_distance"' "$work/straight/metrics.jsonl" || fail "no example-ema.ema_distance in metrics.jsonl"
"$plait" run "$config" --steps 5 --out "$work/first" "${common[@]}" >/dev/null
"$plait" checkpoint inspect "$work/first" >"$work/inspect.log"
grep -q "ema/transformer.wte.weight" "$work/inspect.log" || { cat "$work/inspect.log"; fail "the checkpoint holds no ema state"; }
"$plait" run "$config" --steps 8 --out "$work/resumed" "${common[@]}" --resume "$work/first" >/dev/null
tail -n 3 "$work/straight/metrics.jsonl" | sed 's/"step_ms.*//' >"$work/straight.tail"
sed 's/"step_ms.*//' "$work/resumed/metrics.jsonl" >"$work/resumed.tail"
cmp -s "$work/straight.tail" "$work/resumed.tail" || { diff "$work/straight.tail" "$work/resumed.tail"; fail "resumed losses differ"; }

for f in lib/libplait_sharding.a include/plait/sharding/sharded_engine.hpp include/plait/c10d/communicator.hpp \
         share/plait/templates/data/plugin.cpp.in; do
  test -e "$p/$f" || fail "the install has no $f"
done

echo "installed, moved to $p, ran plait from there; example-ema built against it, validated, trained, saved its state and resumed exactly"
