#!/usr/bin/env python3
"""The agent's egress forwarder (sandbox-agent --egress-proxy) against a direct connection to the
gateway's Unix socket: download and upload throughput, round trips on one connection, new
connections. Not part of run.sh; see "The egress forwarder" in bench/README.md.

  egress_forwarder.py AGENT_BINARY [GIB]        everything on the host (default 1 GiB)
  egress_forwarder.py --serve SOCKET            only the gateway (e.g. for a sandbox's mount)
  egress_forwarder.py --client PORT SOCKET [MIB] only the client side (e.g. inside a sandbox)

The gateway answers "down N" with N bytes, "up N" by reading N bytes and answering "ok", and
echoes any other line.
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

CHUNK = 1 << 20


def serve(path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)  # a sandbox's code user connects too
    listener.listen(128)
    payload = memoryview(os.urandom(CHUNK))
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(conn, payload), daemon=True).start()


def answer(conn, payload):
    with conn:
        buf = bytearray(CHUNK)
        pending = b""
        while True:
            while b"\n" not in pending:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                pending += chunk
            line, _, pending = pending.partition(b"\n")
            words = line.split()
            if words[0] == b"down":
                left = int(words[1])
                while left > 0:
                    conn.sendall(payload[:min(left, CHUNK)])
                    left -= min(left, CHUNK)
            elif words[0] == b"up":
                left, pending = int(words[1]) - len(pending), b""
                while left > 0:
                    n = conn.recv_into(buf, min(left, CHUNK))
                    if n == 0:
                        return
                    left -= n
                conn.sendall(b"ok\n")
            else:
                conn.sendall(line + b"\n")


def connect_tcp(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def connect_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def download_mib_s(connect, size):
    with connect() as s:
        buf = bytearray(CHUNK)
        start = time.perf_counter()
        s.sendall(b"down %d\n" % size)
        left = size
        while left > 0:
            n = s.recv_into(buf)
            assert n > 0, "the connection ended early"
            left -= n
        return size / (time.perf_counter() - start) / (1 << 20)


def upload_mib_s(connect, size):
    with connect() as s:
        payload = memoryview(bytes(CHUNK))
        start = time.perf_counter()
        s.sendall(b"up %d\n" % size)
        left = size
        while left > 0:
            s.sendall(payload[:min(left, CHUNK)])
            left -= min(left, CHUNK)
        assert s.recv(3) == b"ok\n"
        return size / (time.perf_counter() - start) / (1 << 20)


def round_trip_us(connect, count=2000):
    with connect() as s:
        lines = s.makefile("rb")
        start = time.perf_counter()
        for _ in range(count):
            s.sendall(b"ping 0123456789012345678901234567890123456789\n")
            lines.readline()
        return (time.perf_counter() - start) / count * 1e6


def new_connection_us(connect, count=300):
    start = time.perf_counter()
    for _ in range(count):
        with connect() as s:
            s.sendall(b"ping\n")
            s.recv(16)
    return (time.perf_counter() - start) / count * 1e6


def report(forwarded, direct, size):
    mib = size >> 20
    print(f"download {mib} MiB: forwarder {download_mib_s(forwarded, size):6.0f} MiB/s, "
          f"direct {download_mib_s(direct, size):6.0f} MiB/s")
    print(f"upload {mib} MiB: forwarder {upload_mib_s(forwarded, size):6.0f} MiB/s, "
          f"direct {upload_mib_s(direct, size):6.0f} MiB/s")
    f, d = round_trip_us(forwarded), round_trip_us(direct)
    print(f"round trip: forwarder {f:6.1f} us, direct {d:6.1f} us, added {f - d:6.1f} us")
    f, d = new_connection_us(forwarded), new_connection_us(direct)
    print(f"new connection + round trip: forwarder {f:6.1f} us, direct {d:6.1f} us, "
          f"added {f - d:6.1f} us")


def on_host(agent, size):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "egress.sock")
        gateway = subprocess.Popen([sys.executable, __file__, "--serve", path])
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        # stdin stays open: the agent runs until it closes.
        forwarder = subprocess.Popen([agent, "--egress-proxy", f"{port}={path}"],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            while not os.path.exists(path):
                time.sleep(0.01)
            report(lambda: connect_tcp(port), lambda: connect_unix(path), size)
        finally:
            forwarder.stdin.close()
            forwarder.wait()
            gateway.kill()
            gateway.wait()


def main():
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "--client":
        port, path = int(sys.argv[2]), sys.argv[3]
        size = int(sys.argv[4] if len(sys.argv) > 4 else 100) << 20
        report(lambda: connect_tcp(port), lambda: connect_unix(path), size)
    else:
        on_host(sys.argv[1], int(float(sys.argv[2] if len(sys.argv) > 2 else 1) * (1 << 30)))


if __name__ == "__main__":
    main()
