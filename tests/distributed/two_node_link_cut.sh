#!/usr/bin/env bash
# The link between two nodes cut mid-run (tests/distributed/netns_pair.sh: two network
# namespaces joined by a veth pair, one plait launcher in each): both launchers must end
# within collective_timeout_s + 10 s, node 0 naming node 1 as lost, node 1 naming the
# store of node 0 it can no longer reach. Needs root and iproute2; exits 77 (ctest:
# skipped) without them.
set -uo pipefail
plait=$1 src=$2 work=$3
source "$(dirname "$0")/netns_pair.sh"

rm -rf "$work"
mkdir -p "$work"
timeout_s=5
common=(--steps 2000 --set parallel.data=ddp --set parallel.dp=2 --set distributed.rendezvous_timeout_s=30
  --set distributed.collective_timeout_s=$timeout_s --set checkpoint.dir=\"$work/checkpoints\")
port=$(( 29000 + $$ % 1000 ))
for node in 0 1; do
  ns=$ns0; [ $node = 1 ] && ns=$ns1
  ip netns exec "$ns" "$plait" run "$src/configs/quickstart.toml" "${common[@]}" --nnodes 2 --node-rank $node \
    --nproc-per-node 1 --master-addr "$addr0" --master-port "$port" --out "$work/node$node" >"$work/node$node.log" 2>&1 &
  pids[$node]=$!
done
# Cut once the job trains (20 steps recorded), from node 0's side.
for _ in $(seq 600); do
  [ "$(wc -l < "$work/node0/metrics.jsonl" 2>/dev/null || echo 0)" -ge 20 ] && break
  kill -0 "${pids[0]}" 2>/dev/null || break
  sleep 0.1
done
steps=$(wc -l < "$work/node0/metrics.jsonl" 2>/dev/null || echo 0)
[ "$steps" -ge 20 ] || { cat "$work/node0.log" "$work/node1.log"; echo "the job never trained 20 steps"; exit 1; }
ip -n "$ns0" link set "$link0" down
cut=$(date +%s%N)
failed=0
for node in 0 1; do
  wait "${pids[$node]}"
  status[$node]=$?
  ended[$node]=$(( ($(date +%s%N) - cut) / 1000000 ))
done
for node in 0 1; do
  echo "node $node: exit ${status[$node]}, ended ${ended[$node]} ms after the cut"
  if [ "${status[$node]}" = 0 ] || [ "${ended[$node]}" -gt $(( (timeout_s + 10) * 1000 )) ]; then
    echo "node $node should have failed within $(( timeout_s + 10 )) s of the cut"; failed=1
  fi
done
expect() {  # expect NODE SENTENCE
  grep -qF "$2" "$work/node$1.log" || { echo "node $1 does not say: $2"; failed=1; }
}
expect 0 "error: node 1 is lost: its launcher has not been heard from through the job's store for "
expect 0 "(the node is down, or the network to it is cut); rank 0 then failed: "
expect 1 "the job's store at $addr0:$port stopped answering (no reply within 5 s): node 0 is down, or the network to it is cut"
for node in 0 1; do
  if grep -q "Exception raised from\|/pytorch/torch" "$work/node$node.log"; then
    echo "node $node shows LibTorch's backtrace"; failed=1
  fi
done
if [ $failed != 0 ]; then
  for node in 0 1; do echo "--- node $node"; grep -v '^step ' "$work/node$node.log"; done
  exit 1
fi
echo "the cut link was named on both nodes, within $(( timeout_s + 10 )) s"
