#!/usr/bin/env python3
"""A small RFB-over-WebSocket client for the gateway's tests (stdlib only).

    rfb_ws.py URL [--pixel X,Y] [--wait-pixel X,Y=R,G,B] [--click X,Y] [--key KEYSYM] [--status] [--hold]

Connects to the gateway's ws:// URL, prints the HTTP status of the upgrade
with --status (and stops), else does the RFB 3.8 handshake with security
None, reads one full frame and prints "WxH" and, per --pixel, "X,Y R G B"
lines. --wait-pixel asks for full frames again (for up to 30 s) until the
pixel has that colour, before the rest: a VNC server that had no client may
serve what it last saw first. --click sends a left press and release at X,Y; --key a key press and
release; both are sent after the first frame, then one more full frame is
read (so the server has taken them in) before closing. --hold prints
"connected" after the first frame and then stays until the gateway closes
the connection (printing "closed"; at most 60 s). A server that offers no
security type gets its reason printed as "refused: REASON" (exit 4).
"""
import base64
import os
import socket
import struct
import sys
import time
import urllib.parse


def ws_connect(url, timeout=20):
    u = urllib.parse.urlsplit(url)
    host, port = u.hostname, u.port or 80
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("rfb_ws.py: loopback addresses only")
    s = socket.create_connection((host, port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    path = u.path + ("?" + u.query if u.query else "")
    req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n\r\n"
           % (path, host, port, key))
    s.sendall(req.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    line = head.split(b"\r\n", 1)[0].decode(errors="replace")
    status = int(line.split()[1]) if len(line.split()) > 1 else 0
    rest = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
    return s, status, rest


class WS:
    def __init__(self, sock, rest):
        self.s = sock
        self.frames = rest  # raw bytes not yet parsed as frames
        self.data = b""     # payload bytes

    def send(self, payload):
        mask = os.urandom(4)
        n = len(payload)
        hdr = bytes([0x82])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.s.sendall(hdr + mask + body)

    def _fill(self):
        while True:
            f = self.frames
            if len(f) >= 2:
                n = f[1] & 0x7F
                off = 2
                if n == 126:
                    if len(f) < 4:
                        n = None
                    else:
                        n = struct.unpack(">H", f[2:4])[0]
                        off = 4
                elif n == 127:
                    if len(f) < 10:
                        n = None
                    else:
                        n = struct.unpack(">Q", f[2:10])[0]
                        off = 10
                if n is not None and len(f) >= off + n:
                    op = f[0] & 0x0F
                    payload = f[off:off + n]
                    self.frames = f[off + n:]
                    if op == 8:
                        raise EOFError("closed by the gateway")
                    if op in (0, 1, 2):
                        self.data += payload
                    return
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise EOFError("connection closed")
            self.frames += chunk

    def recv(self, n):
        while len(self.data) < n:
            self._fill()
        out, self.data = self.data[:n], self.data[n:]
        return out


def read_frame(ws, w, h, fb):
    ws.send(struct.pack(">BBHHHH", 3, 0, 0, 0, w, h))
    while True:
        t = ws.recv(1)[0]
        if t == 0:
            break
        if t == 2:  # bell
            continue
        if t == 3:
            ws.recv(3)
            ws.recv(struct.unpack(">I", ws.recv(4))[0])
            continue
        if t == 1:
            ws.recv(5)
            _, n = struct.unpack(">HH", ws.recv(4))
            for _ in range(n):
                ws.recv(12)
            continue
        raise SystemExit("rfb_ws.py: unexpected server message %d" % t)
    ws.recv(1)
    (n,) = struct.unpack(">H", ws.recv(2))
    for _ in range(n):
        x, y, rw, rh, enc = struct.unpack(">HHHHi", ws.recv(12))
        if enc != 0:
            raise SystemExit("rfb_ws.py: unexpected encoding %d" % enc)
        data = ws.recv(rw * rh * 4)
        for row in range(rh):
            start = ((y + row) * w + x) * 4
            fb[start:start + rw * 4] = data[row * rw * 4:(row + 1) * rw * 4]


def rgb_at(fb, w, x, y):
    i = (y * w + x) * 4
    return (fb[i + 2], fb[i + 1], fb[i])


def main():
    args = sys.argv[1:]
    url = args.pop(0)
    pixels, waits, clicks, keys, status_only, hold = [], [], [], [], False, False
    while args:
        a = args.pop(0)
        if a == "--pixel":
            pixels.append(tuple(int(v) for v in args.pop(0).split(",")))
        elif a == "--wait-pixel":
            xy, rgb = args.pop(0).split("=")
            waits.append((tuple(int(v) for v in xy.split(",")), tuple(int(v) for v in rgb.split(","))))
        elif a == "--click":
            clicks.append(tuple(int(v) for v in args.pop(0).split(",")))
        elif a == "--key":
            keys.append(int(args.pop(0), 0))
        elif a == "--status":
            status_only = True
        elif a == "--hold":
            hold = True
        else:
            sys.exit("rfb_ws.py: unknown argument " + a)
    s, status, rest = ws_connect(url)
    if status_only:
        print(status)
        return
    if status != 101:
        print("status %d" % status)
        sys.exit(1)
    ws = WS(s, rest)
    ver = ws.recv(12)
    if not ver.startswith(b"RFB 003."):
        sys.exit("rfb_ws.py: not RFB: %r" % ver)
    ws.send(b"RFB 003.008\n")
    n = ws.recv(1)[0]
    if n == 0:  # the server says why it will not serve us
        reason = ws.recv(struct.unpack(">I", ws.recv(4))[0]).decode(errors="replace")
        print("refused: %s" % reason)
        sys.exit(4)
    types = ws.recv(n)
    if 1 not in types:
        sys.exit("rfb_ws.py: no security type None")
    ws.send(bytes([1]))
    if struct.unpack(">I", ws.recv(4))[0] != 0:
        sys.exit("rfb_ws.py: security failed")
    ws.send(bytes([1]))  # shared
    w, h = struct.unpack(">HH", ws.recv(4))
    ws.recv(16)
    ws.recv(struct.unpack(">I", ws.recv(4))[0])
    # 32 bpp, depth 24, little endian, true colour, r/g/b at 16/8/0
    ws.send(struct.pack(">BBBB", 0, 0, 0, 0) + struct.pack(">BBBBHHHBBBBBB", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0, 0, 0, 0))
    ws.send(struct.pack(">BBHi", 2, 0, 1, 0))  # raw only
    fb = bytearray(w * h * 4)
    read_frame(ws, w, h, fb)
    deadline = time.monotonic() + 30
    while any(rgb_at(fb, w, x, y) != rgb for (x, y), rgb in waits):
        if time.monotonic() > deadline:
            sys.exit("rfb_ws.py: the pixels never became %r" % (waits,))
        time.sleep(0.2)
        read_frame(ws, w, h, fb)
    if clicks or keys:
        for x, y in clicks:
            ws.send(struct.pack(">BBHH", 5, 0, x, y))
            ws.send(struct.pack(">BBHH", 5, 1, x, y))
            ws.send(struct.pack(">BBHH", 5, 0, x, y))
        for k in keys:
            ws.send(struct.pack(">BBxxI", 4, 1, k))
            ws.send(struct.pack(">BBxxI", 4, 0, k))
        read_frame(ws, w, h, fb)
    if hold:
        print("connected", flush=True)
        s.settimeout(60)
        try:
            while True:
                ws._fill()
        except EOFError:
            print("closed", flush=True)
            return
    print("%dx%d" % (w, h))
    for x, y in pixels:
        print("%d,%d %d %d %d" % ((x, y) + rgb_at(fb, w, x, y)))


if __name__ == "__main__":
    try:
        main()
    except (EOFError, ConnectionError, socket.timeout) as e:
        print("rfb_ws.py: %s" % e, file=sys.stderr)
        sys.exit(3)
