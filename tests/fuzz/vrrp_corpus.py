#!/usr/bin/python3
# Writes the seed corpus of vrrp_fuzz (tests/fuzz/corpus/vrrp) with scapy 2.5.0:
#   /usr/bin/python3 tests/fuzz/vrrp_corpus.py tests/fuzz/corpus/vrrp
# Each file is the fuzz input: a flags byte (vrrp_fuzz.cpp) and the bytes.
# keepalived-*: frames captured from keepalived 2.2.7 (vrrp_version 3).
import sys
from scapy.all import *
from scapy.layers.vrrp import VRRPv3, VRRP
from scapy.layers.inet6 import *
d = sys.argv[1]
def w(name, flags, p):
    open(f"{d}/{name}", "wb").write(bytes([flags]) + bytes(p))
v4 = Ether(src="00:00:5e:00:01:0a", dst="01:00:5e:00:00:12")/IP(src="10.1.0.2", dst="224.0.0.18", ttl=255, tos=0xc0, id=0, flags=0)/VRRPv3(vrid=10, priority=150, adv=10, ipcount=1, addrlist=["10.1.0.254"])
w("advert-v4", 0, v4)
w("advert-v4-vlan", 0, Ether(src="00:00:5e:00:01:0a", dst="01:00:5e:00:00:12")/Dot1Q(vlan=100)/v4[IP])
w("advert-v4-ip", 0, v4[IP])
w("advert-v4-message", 2, v4[VRRPv3])
v6 = Ether(src="00:00:5e:00:02:14", dst="33:33:00:00:00:12")/IPv6(src="fe80::1", dst="ff02::12", hlim=255, tc=0xc0)/VRRPv3(vrid=20, priority=100, adv=100, ipcount=2, addrlist=["2001:db8:1::fe", "fe80::fe"])
w("advert-v6", 1, v6)
w("advert-v6-ip", 1, v6[IPv6])
w("advert-v6-message", 3, v6[VRRPv3])
w("vrrpv2", 0, Ether()/IP(src="10.1.0.2", dst="224.0.0.18", ttl=255)/VRRP(vrid=10, priority=150, ipcount=1, addrlist=["10.1.0.254"]))
w("garp", 0, Ether(src="00:00:5e:00:01:0a", dst="ff:ff:ff:ff:ff:ff")/ARP(op=1, hwsrc="00:00:5e:00:01:0a", psrc="10.1.0.254", hwdst="00:00:00:00:00:00", pdst="10.1.0.254"))
w("arp-request", 0, Ether(src="02:00:00:00:00:05", dst="ff:ff:ff:ff:ff:ff")/ARP(op=1, hwsrc="02:00:00:00:00:05", psrc="10.1.0.5", pdst="10.1.0.254")/Padding(load=b"\0"*18))
w("na-unsolicited", 1, Ether(src="00:00:5e:00:02:14", dst="33:33:00:00:00:01")/IPv6(src="fe80::1", dst="ff02::1", hlim=255)/ICMPv6ND_NA(R=1, S=0, O=1, tgt="2001:db8:1::fe")/ICMPv6NDOptDstLLAddr(lladdr="00:00:5e:00:02:14"))
w("ns", 1, Ether(src="02:00:00:00:00:05", dst="33:33:ff:00:00:fe")/IPv6(src="2001:db8:1::5", dst="ff02::1:ff00:fe", hlim=255)/ICMPv6ND_NS(tgt="2001:db8:1::fe")/ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:05"))
w("ns-dad", 1, Ether(src="02:00:00:00:00:05", dst="33:33:ff:00:00:fe")/IPv6(src="::", dst="ff02::1:ff00:fe", hlim=255)/ICMPv6ND_NS(tgt="2001:db8:1::fe"))
w("ns-hbh", 1, Ether(src="02:00:00:00:00:05", dst="33:33:ff:00:00:fe")/IPv6(src="2001:db8:1::5", dst="ff02::1:ff00:fe", hlim=255)/IPv6ExtHdrHopByHop()/ICMPv6ND_NS(tgt="2001:db8:1::fe"))
