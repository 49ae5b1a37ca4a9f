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
grep -q "plait_DIR=$work/moved/lib/cmake/plait" my-ddp/CMakeLists.txt || fail "the project does not point at the install's CMake package"

printf '%s\n' my-ddp my-zero my-gpipe my-tp my-host my-gloo \
  | xargs -P 2 -I{} sh -c './{}/test.sh > {}.log 2>&1 || echo {} >> failed.txt'
if [ -s failed.txt ]; then
  for p in $(cat failed.txt); do echo "== $p"; tail -40 "$p.log"; done
  fail "these did not build or pass plait verify --quick: $(tr '\n' ' ' < failed.txt)"
fi
for p in my-ddp my-zero my-gpipe my-tp my-host my-gloo; do
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
echo "new plugin: data, data --from sharding, pipeline, tensor, offload and comm projects built against the moved install and passed plait verify --quick"
