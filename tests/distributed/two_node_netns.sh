#!/usr/bin/env bash
# Two "machines" on one host: two network namespaces joined by a veth pair, one plait
# launcher in each (--nnodes 2), reaching each other only over that link. The job must
# train exactly like the same mesh on one node. Needs root and iproute2; exits 77
# (ctest: skipped) without them.
set -euo pipefail
plait=$1 src=$2 work=$3
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then echo "needs root and iproute2"; exit 77; fi
if ! ip netns add "plait-probe-$$" 2>/dev/null; then echo "network namespaces are not available here"; exit 77; fi
ip netns del "plait-probe-$$"

ns0=plait-a-$$ ns1=plait-b-$$ link0=pla$$ link1=plb$$
addr0=10.231.$(( $$ % 200 )).1 addr1=10.231.$(( $$ % 200 )).2
cleanup() { ip netns del "$ns0" 2>/dev/null || true; ip netns del "$ns1" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$ns0"
ip netns add "$ns1"
ip link add "$link0" type veth peer name "$link1"
ip link set "$link0" netns "$ns0"
ip link set "$link1" netns "$ns1"
ip -n "$ns0" addr add "$addr0/24" dev "$link0"
ip -n "$ns1" addr add "$addr1/24" dev "$link1"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "$link0" up
ip -n "$ns1" link set "$link1" up

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
