#!/usr/bin/env bash
# Builds sdk/examples/ema from outside the plait tree with find_package(plait), then
# checks that plait finds it, validates its options, and trains with it.
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake -S "$src/sdk/examples/ema" -B "$work/build" -G Ninja -Dplait_DIR="$build/sdk" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"
export PLAIT_PLUGIN_PATH="$work/build"
"$build/bin/plait" plugins | grep -q "example-ema 0.1.0" || { echo "plait plugins does not list example-ema"; exit 1; }
if "$build/bin/plait" config validate "$src/configs/gpt2-tiny-single.toml" --set parallel.data=example-ema \
     --set example-ema.decy=0.5 >"$work/typo.log" 2>&1; then
  echo "a misspelt example-ema option was accepted"; exit 1
fi
grep -q "did you mean 'decay'" "$work/typo.log" || { cat "$work/typo.log"; echo "no suggestion for a typo"; exit 1; }
"$build/bin/plait" run "$src/configs/gpt2-tiny-single.toml" --steps 5 --out "$work/run" \
  --set parallel.data=example-ema --set example-ema.decay=0.9 --set checkpoint.save_final=true >"$work/run.log"
grep -q '"example-ema.ema_distance"' "$work/run/metrics.jsonl" || { echo "no ema_distance in metrics.jsonl"; exit 1; }
test -f "$work/run/final.safetensors"
# Its own state (the average) goes into the checkpoint, and comes back on resume: the
# resumed run's steps 6-8 equal those of a straight 8-step run, bit for bit.
"$build/bin/plait" checkpoint inspect "$work/run" >"$work/inspect.log"
grep -q "ema/transformer.wte.weight" "$work/inspect.log" || { cat "$work/inspect.log"; echo "the checkpoint holds no ema state"; exit 1; }
common=(--set parallel.data=example-ema --set example-ema.decay=0.9 --set train.lr_schedule=constant)
"$build/bin/plait" run "$src/configs/gpt2-tiny-single.toml" --steps 8 --out "$work/straight" "${common[@]}" >/dev/null
"$build/bin/plait" run "$src/configs/gpt2-tiny-single.toml" --steps 5 --out "$work/first" "${common[@]}" >/dev/null
"$build/bin/plait" run "$src/configs/gpt2-tiny-single.toml" --steps 8 --out "$work/resumed" "${common[@]}" \
  --resume "$work/first" >/dev/null
tail -n 3 "$work/straight/metrics.jsonl" | sed 's/"step_ms.*//' > "$work/straight.tail"
sed 's/"step_ms.*//' "$work/resumed/metrics.jsonl" > "$work/resumed.tail"
cmp -s "$work/straight.tail" "$work/resumed.tail" || { diff "$work/straight.tail" "$work/resumed.tail"; echo "resumed losses differ"; exit 1; }
echo "example-ema built out of tree, listed, validated, trained, saved its state and resumed exactly"
