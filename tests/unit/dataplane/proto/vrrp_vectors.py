#!/usr/bin/python3
# Prints the byte tables of tests/unit/dataplane/proto/vrrp_test.cpp as scapy
# 2.5.0 builds them (run by hand: /usr/bin/python3 vrrp_vectors.py).
from scapy.all import *
from scapy.layers.vrrp import VRRPv3
from scapy.layers.inet6 import *
def dump(name, p):
    b = bytes(p)
    print(f"// {name} ({len(b)} bytes): {p.summary()}")
    for i in range(0, len(b), 12):
        print("    " + ", ".join(f"0x{x:02x}" for x in b[i:i+12]) + ",")
v4 = Ether(src="00:00:5e:00:01:0a", dst="01:00:5e:00:00:12")/IP(src="10.1.0.2", dst="224.0.0.18", ttl=255, tos=0xc0, id=0, flags=0)/VRRPv3(vrid=10, priority=150, adv=10, ipcount=1, addrlist=["10.1.0.254"])
dump("advert v4", v4)
v6 = Ether(src="00:00:5e:00:02:14", dst="33:33:00:00:00:12")/IPv6(src="fe80::1", dst="ff02::12", hlim=255, tc=0xc0)/VRRPv3(vrid=20, priority=100, adv=100, ipcount=2, addrlist=["2001:db8:1::fe", "fe80::fe"])
dump("advert v6", v6)
garp = Ether(src="00:00:5e:00:01:0a", dst="ff:ff:ff:ff:ff:ff")/ARP(op=1, hwsrc="00:00:5e:00:01:0a", psrc="10.1.0.254", hwdst="00:00:00:00:00:00", pdst="10.1.0.254")
dump("garp", garp)
rep = Ether(src="00:00:5e:00:01:0a", dst="02:00:00:00:00:05")/ARP(op=2, hwsrc="00:00:5e:00:01:0a", psrc="10.1.0.254", hwdst="02:00:00:00:00:05", pdst="10.1.0.5")
dump("arp reply", rep)
una = Ether(src="00:00:5e:00:02:14", dst="33:33:00:00:00:01")/IPv6(src="fe80::1", dst="ff02::1", hlim=255)/ICMPv6ND_NA(R=1, S=0, O=1, tgt="2001:db8:1::fe")/ICMPv6NDOptDstLLAddr(lladdr="00:00:5e:00:02:14")
dump("unsolicited na", una)
sna = Ether(src="00:00:5e:00:02:14", dst="02:00:00:00:00:05")/IPv6(src="2001:db8:1::fe", dst="2001:db8:1::5", hlim=255)/ICMPv6ND_NA(R=0, S=1, O=1, tgt="2001:db8:1::fe")/ICMPv6NDOptDstLLAddr(lladdr="00:00:5e:00:02:14")
dump("solicited na", sna)
ns = Ether(src="02:00:00:00:00:05", dst="33:33:ff:00:00:fe")/IPv6(src="2001:db8:1::5", dst="ff02::1:ff00:fe", hlim=255)/ICMPv6ND_NS(tgt="2001:db8:1::fe")/ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:05")
dump("ns", ns)
req = Ether(src="02:00:00:00:00:05", dst="ff:ff:ff:ff:ff:ff")/ARP(op=1, hwsrc="02:00:00:00:00:05", psrc="10.1.0.5", pdst="10.1.0.254")/Padding(load=b"\0"*18)
dump("arp request", req)
v4t = Ether(src="00:00:5e:00:01:0a", dst="01:00:5e:00:00:12")/IP(src="10.1.0.2", dst="224.0.0.18", ttl=64, tos=0xc0, id=0, flags=0)/VRRPv3(vrid=10, priority=150, adv=10, ipcount=1, addrlist=["10.1.0.254"])
b=bytes(v4t); print("ttl64 ipcsum", b[24:26].hex())
from scapy.layers.vrrp import VRRP
v2 = IP(src="10.1.0.2", dst="224.0.0.18", ttl=255)/VRRP(vrid=10, priority=150, ipcount=1, addrlist=["10.1.0.254"])
dump("vrrpv2 ip", v2)
u = IP(src="10.1.0.2", dst="10.1.0.3", ttl=255)/VRRPv3(vrid=10, priority=150, adv=10, ipcount=1, addrlist=["10.1.0.254"])
print("unicast to 10.1.0.3, VRRP message:", bytes(u)[20:].hex())
