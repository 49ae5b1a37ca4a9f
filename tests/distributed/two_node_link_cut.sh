#!/usr/bin/env bash
# The link between two nodes cut mid-run (tests/distributed/netns_pair.sh: two network
# namespaces joined by a veth pair, one plait launcher in each):
#  1. without restarts, both launchers end within collective_timeout_s + 10 s, node 0
#     naming node 1 as lost, node 1 naming node 0's store it can no longer reach;
#  2. with max_restarts = 1 and the link back 8 s later, node 1 rejoins node 0's store, the
#     job restarts from its newest checkpoint and ends bit-identical to a one-node run (one
#     thread per rank in both: a rank alone on its node would take every core, and sum in
#     another order).
# Needs root and iproute2; exits 77 (ctest: skipped) without them.
set -uo pipefail
plait=$1 src=$2 work=$3
source "$(dirname "$0")/netns_pair.sh"

rm -rf "$work"
mkdir -p "$work"
timeout_s=5
config="$src/configs/quickstart.toml"
common=(--set parallel.data=ddp --set parallel.dp=2 --set distributed.rendezvous_timeout_s=30
  --set distributed.collective_timeout_s=$timeout_s --set checkpoint.every=10 --set train.threads=1)
port=$(( 29000 + $$ % 1000 ))
failed=0

start_job() {  # start_job NAME STEPS RESTARTS: both launchers in the background, pids in ${pids[@]}
  local name=$1 steps=$2 restarts=$3
  port=$((port + 1))
  for node in 0 1; do
    local ns=$ns0
    [ $node = 1 ] && ns=$ns1
    ip netns exec "$ns" "$plait" run "$config" "${common[@]}" --steps "$steps" --max-restarts "$restarts" \
      --set checkpoint.dir=\""$work/$name/checkpoints"\" --nnodes 2 --node-rank $node --nproc-per-node 1 \
      --master-addr "$addr0" --master-port "$port" --out "$work/$name/node$node" >"$work/$name/node$node.log" 2>&1 &
    pids[$node]=$!
  done
}

cut_after() {  # cut_after NAME STEPS: cut the link from node 0's side once STEPS are recorded
  local name=$1 want=$2 steps=0
  for _ in $(seq 600); do
    steps=$(wc -l < "$work/$name/node0/metrics.jsonl" 2>/dev/null || echo 0)
    [ "$steps" -ge "$want" ] && break
    kill -0 "${pids[0]}" 2>/dev/null || break
    sleep 0.1
  done
  [ "$steps" -ge "$want" ] || { cat "$work/$name/node0.log" "$work/$name/node1.log"; echo "$name never trained $want steps"; exit 1; }
  ip -n "$ns0" link set "$link0" down
  cut=$(date +%s%N)
}

expect() {  # expect NAME NODE SENTENCE
  grep -qF "$3" "$work/$1/node$2.log" || { echo "$1: node $2 does not say: $3"; failed=1; }
}

show() { for node in 0 1; do echo "--- $1: node $node"; grep -v '^step ' "$work/$1/node$node.log"; done; }

# 1. No restarts: both end, each naming the other side.
mkdir -p "$work/cut"
start_job cut 2000 0
cut_after cut 20
for node in 0 1; do
  wait "${pids[$node]}"
  code=$?
  ms=$(( ($(date +%s%N) - cut) / 1000000 ))
  echo "cut: node $node exited $code, $ms ms after the cut"
  if [ $code = 0 ] || [ $ms -gt $(( (timeout_s + 10) * 1000 )) ]; then
    echo "cut: node $node should have failed within $(( timeout_s + 10 )) s of the cut"; failed=1
  fi
  if grep -q "Exception raised from\|/pytorch/" "$work/cut/node$node.log"; then
    echo "cut: node $node shows LibTorch's backtrace"; failed=1
  fi
done
expect cut 0 "error: node 1 is lost: its launcher has not been heard from through the job's store for "
expect cut 0 "(the node is down, or the network to it is cut); rank 0 then failed: "
expect cut 1 "the job's store at $addr0:$port stopped answering (no reply within 5 s): node 0 is down, or the network to it is cut"
[ $failed = 0 ] || show cut

# 2. One restart allowed, the link back after 8 s: the job resumes and ends as if never cut.
ip -n "$ns0" link set "$link0" up
mkdir -p "$work/rejoin"
start_job rejoin 100 1
cut_after rejoin 25
sleep 8
ip -n "$ns0" link set "$link0" up
for node in 0 1; do
  wait "${pids[$node]}" || { echo "rejoin: node $node failed"; failed=1; }
done
expect rejoin 1 "node 0's store stopped answering; waiting up to 30 s for it to answer again, to restart the job"
expect rejoin 1 "node 0's store answers again"
expect rejoin 0 "restart 1 after: node 1 is lost: "
expect rejoin 0 "restarted 1 time(s): restarts.json"
"$plait" run "$config" "${common[@]}" --steps 100 --out "$work/straight" >"$work/straight.log" 2>&1 ||
  { cat "$work/straight.log"; echo "the one-node run failed"; failed=1; }
if ! "$plait" checkpoint diff "$work/straight" "$work/rejoin/checkpoints" >"$work/diff.log" 2>&1; then
  cat "$work/diff.log"; echo "rejoin: the restarted job ended with other weights than the one-node run"; failed=1
fi
if [ $failed != 0 ]; then
  show rejoin
  exit 1
fi
echo "a cut link was named on both nodes within $(( timeout_s + 10 )) s; with a restart the job rejoined and ended bit-identical"
