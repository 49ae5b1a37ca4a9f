#!/usr/bin/env bash
# `plait new plugin` of every kind from a moved install: each project's own test.sh
# builds it against that install alone and runs `plait verify --quick` on it, and its
# config.toml is valid. Two projects build at a time.
test_name="new-plugin test"
source "$(dirname "$0")/moved_install.sh"
plait="$work/moved/bin/plait"
cd "$work"
"$plait" new plugin my-ddp --kind data >/dev/null
"$plait" new plugin my-zero --kind data --from sharding >/dev/null
"$plait" new plugin my-gpipe --kind pipeline >/dev/null
"$plait" new plugin my-tp --kind tensor >/dev/null
"$plait" new plugin my-host --kind offload >/dev/null
"$plait" new plugin my-gloo --kind comm >/dev/null
"$plait" new plugin my-adapter --kind adapter >/dev/null
grep -q "plait_DIR=$work/moved/lib/cmake/plait" my-ddp/CMakeLists.txt || fail "the project does not point at the install's CMake package"

printf '%s\n' my-ddp my-zero my-gpipe my-tp my-host my-gloo my-adapter \
  | xargs -P 2 -I{} sh -c './{}/test.sh > {}.log 2>&1 || echo {} >> failed.txt'
if [ -s failed.txt ]; then
  for p in $(cat failed.txt); do echo "== $p"; tail -40 "$p.log"; done
  fail "these did not build or pass plait verify --quick: $(tr '\n' ' ' < failed.txt)"
fi
for p in my-ddp my-zero my-gpipe my-tp my-host my-gloo my-adapter; do
  grep -q "^PASS: " "$p.log" || fail "$p: plait verify printed no PASS"
  grep -q ": valid (" "$p.log" || fail "$p: its config.toml was not validated"
done
# The generated config trains with the generated plugin.
"$plait" run my-gpipe/config.toml --steps 2 --out "$work/gpipe-run" >"$work/gpipe-run.log" 2>&1 \
  || { cat "$work/gpipe-run.log"; fail "my-gpipe/config.toml does not train"; }
# The sharded project is an in-house hybrid ZeRO: dp 4 sharded within pairs and
# replicated across them, at stage 3, is the single process.
PLAIT_PLUGIN_PATH="$work/my-zero/build" "$plait" check "$work/moved/share/plait/configs/quickstart.toml" --steps 4 \
  --out "$work/hybrid-check" --set parallel.data=my-zero --set parallel.dp=4 --set my-zero.shard_size=2 \
  --set my-zero.stage=3 --set data.micro_batch_size=4 --set train.dtype=float64 >"$work/hybrid-check.log" 2>&1 \
  || { cat "$work/hybrid-check.log"; fail "my-zero on dp 4 (shard 2) is not the single process"; }
grep -q "replicated 2 ways" "$work/hybrid-check/candidate/rank-0.log" || fail "my-zero did not replicate across 2 shard groups"
# The adapter project's export is a PEFT adapter as written: its config and tensors.
"$plait" run my-adapter/config.toml --steps 2 --out "$work/adapter-run" >"$work/adapter-run.log" 2>&1 \
  || { cat "$work/adapter-run.log"; fail "my-adapter/config.toml does not train"; }
"$plait" export "$work/adapter-run" --peft "$work/adapter-peft" >"$work/adapter-peft.log" 2>&1 \
  || { cat "$work/adapter-peft.log"; fail "my-adapter's run does not export for PEFT"; }
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); sys.exit(not (c["peft_type"] == "LORA" and c["r"] == 4 and c["lora_alpha"] == 8 and c["fan_in_fan_out"] and "c_attn" in c["target_modules"]))' \
  "$work/adapter-peft/adapter_config.json" || fail "my-adapter's adapter_config.json is not the LoRA config PEFT reads"
grep -q "(gpt2 tiny, step 2): 4 adapter tensors" "$work/adapter-peft.log" || { cat "$work/adapter-peft.log"; fail "my-adapter exported not the 4 adapter tensors of gpt2 tiny's two c_attn"; }
echo "new plugin: data, data --from sharding, pipeline, tensor, offload, comm and adapter projects built against the moved install and passed plait verify --quick"
