#!/usr/bin/env bash
# Two "machines" on one host: two network namespaces joined by a veth pair, one plait
# launcher in each (--nnodes 2), reaching each other only over that link. The job must
# train exactly like the same mesh on one node. Needs root and iproute2; exits 77
# (ctest: skipped) without them.
set -euo pipefail
plait=$1 src=$2 work=$3
source "$(dirname "$0")/netns_pair.sh"

rm -rf "$work"
mkdir -p "$work"
config="$src/configs/quickstart.toml"
common=(--steps 6 --set parallel.data=ddp --set parallel.dp=2 --set distributed.rendezvous_timeout_s=30)
port=$(( 29000 + $$ % 1000 ))
ip netns exec "$ns0" "$plait" run "$config" "${common[@]}" --nnodes 2 --node-rank 0 --nproc-per-node 1 \
  --master-addr "$addr0" --master-port "$port" --out "$work/node0" >"$work/node0.log" 2>&1 &
pid0=$!
ip netns exec "$ns1" "$plait" run "$config" "${common[@]}" --nnodes 2 --node-rank 1 --nproc-per-node 1 \
  --master-addr "$addr0" --master-port "$port" --out "$work/node1" >"$work/node1.log" 2>&1 &
pid1=$!
status=0
wait $pid0 || status=$?
wait $pid1 || status=$?
if [ $status != 0 ]; then cat "$work/node0.log" "$work/node1.log"; echo "the two-node job failed"; exit 1; fi
"$plait" run "$config" "${common[@]}" --out "$work/one-node" >"$work/one-node.log" 2>&1
python3 - "$work/node0/metrics.jsonl" "$work/one-node/metrics.jsonl" <<'PY'
import json, sys
two = [json.loads(l)["loss"] for l in open(sys.argv[1])]
one = [json.loads(l)["loss"] for l in open(sys.argv[2])]
print("two nodes:", [round(x, 6) for x in two])
print("one node: ", [round(x, 6) for x in one])
assert len(two) == len(one) == 6, "step counts differ"
worst = max(abs(a - b) / abs(b) for a, b in zip(two, one))
assert worst <= 1e-6, f"losses differ by {worst} (relative)"
print(f"two-node job over veth matches the one-node job (worst relative difference {worst:.1e})")
PY
