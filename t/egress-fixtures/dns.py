"""A rebinding DNS server for t/egress.bats: every A query for NAME is
answered alternately with PUBLIC and 127.0.0.1 (TTL 0), as an attacker's
server would between a proxy's check and its connect; AAAA queries get no
answer. Each A answer is appended to LOG.

usage: python3 dns.py ADDRESS NAME PUBLIC LOG
"""
import socket
import struct
import sys

address, name, public, log = sys.argv[1:5]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((address, 53))
answers = [public, "127.0.0.1"]
count = 0
while True:
    query, peer = sock.recvfrom(512)
    ident, _flags, qdcount = struct.unpack("!HHH", query[:6])
    pos, labels = 12, []
    while query[pos]:
        labels.append(query[pos + 1:pos + 1 + query[pos]].decode("ascii", "replace"))
        pos += 1 + query[pos]
    question = query[12:pos + 5]
    qtype = struct.unpack("!H", query[pos + 1:pos + 3])[0]
    found = ".".join(labels).lower() == name
    rcode = 0 if found else 3
    answer = b""
    if found and qtype == 1:
        addr = answers[count % 2]
        count += 1
        with open(log, "a", encoding="utf-8") as f:
            f.write(addr + "\n")
        answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 0, 4) + socket.inet_aton(addr)
    header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, qdcount, 1 if answer else 0, 0, 0)
    sock.sendto(header + question + answer, peer)
