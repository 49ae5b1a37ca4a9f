# Sourced: two network namespaces joined by a veth pair, "two machines" on one host, with
# addresses $addr0 and $addr1 in $ns0 and $ns1 (links $link0, $link1), removed on exit.
# Needs root and iproute2; exits 77 (ctest: skipped) without them.
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then echo "needs root and iproute2"; exit 77; fi
if ! ip netns add "plait-probe-$$" 2>/dev/null; then echo "network namespaces are not available here"; exit 77; fi
ip netns del "plait-probe-$$"

ns0=plait-a-$$ ns1=plait-b-$$ link0=pla$$ link1=plb$$
addr0=10.231.$(( $$ % 200 )).1 addr1=10.231.$(( $$ % 200 )).2
netns_cleanup() { ip netns del "$ns0" 2>/dev/null || true; ip netns del "$ns1" 2>/dev/null || true; }
trap netns_cleanup EXIT
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
