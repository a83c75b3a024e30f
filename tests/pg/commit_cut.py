#!/usr/bin/env python3
"""commit_cut.py - a TCP proxy in front of PostgreSQL that cuts chosen
COMMITs of write transactions (tests/pg/test_pg_commit_lost.sh).

usage: commit_cut.py --target HOST:PORT --port-file FILE --arm-file FILE
                     --log FILE [--lose-answer N,...] [--lose-commit N,...]

Once --arm-file exists, the proxy counts the COMMITs clients send in
transactions that wrote (a statement bound or sent whose text begins with
INSERT, UPDATE or DELETE since the transaction began). For the N-th such
COMMIT:
  --lose-answer N: the COMMIT reaches the server; once the server has
      answered it (committed), that whole answer - with the answers of the
      writes sent with it - never reaches the client, and both connections
      are closed;
  --lose-commit N: the COMMIT never reaches the server; both connections are
      closed (the server rolls the transaction back).
Each cut is one line in --log: "<answer|commit> <N> <statements>".

The clients must not ask for TLS or GSS encryption (sslmode=disable,
gssencmode=disable): the proxy reads the protocol's messages in the clear.
"""
import argparse
import os
import socket
import struct
import threading

WRITES = (b"INSERT", b"UPDATE", b"DELETE")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--arm-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--lose-answer", default="")
    p.add_argument("--lose-commit", default="")
    a = p.parse_args()
    a.lose_answer = {int(x) for x in a.lose_answer.split(",") if x}
    a.lose_commit = {int(x) for x in a.lose_commit.split(",") if x}
    return a


ARGS = parse_args()
COUNT_LOCK = threading.Lock()
COUNT = [0]


def log(line):
    with open(ARGS.log, "a") as f:
        f.write(line + "\n")


def recv_exact(sock, n):
    """n bytes, or None at the end of the stream (or once the link closed it)."""
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def read_message(sock, typed=True):
    """(type, whole message bytes) or None at the end of the stream."""
    head = recv_exact(sock, 5 if typed else 4)
    if head is None:
        return None
    length = struct.unpack("!I", head[1:5] if typed else head[0:4])[0]
    body = recv_exact(sock, length - 4)
    if body is None:
        return None
    return (head[0:1] if typed else b"", head + body)


def cstring(data, at):
    end = data.index(b"\0", at)
    return data[at:end], end + 1


class Link:
    def __init__(self, client, server):
        self.client, self.server = client, server
        self.lock = threading.Lock()
        self.statements = {}  # prepared statement name -> its SQL text
        self.wrote = False
        self.tags = []
        self.lose_answer = None  # the number of the COMMIT whose answer is lost

    def close(self):
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def statement_sql(self, kind, msg):
        """The SQL a client message runs (b"" when none)."""
        body = msg[5:]
        if kind == b"Q":
            return cstring(body, 0)[0]
        if kind == b"P":
            name, at = cstring(body, 0)
            sql = cstring(body, at)[0]
            self.statements[name] = sql
            return sql if name == b"" else b""  # a named one runs at its Bind
        if kind == b"B":
            at = cstring(body, 0)[1]
            return self.statements.get(cstring(body, at)[0], b"")
        return b""

    def client_to_server(self):
        first = True
        while True:
            m = read_message(self.client, typed=not first)
            first = False
            if m is None:
                break
            kind, msg = m
            sql = self.statement_sql(kind, msg).lstrip().upper()
            if sql.startswith(b"BEGIN"):
                self.wrote, self.tags = False, []
            if sql.startswith(WRITES):
                self.wrote = True
                self.tags.append(sql.split(b" ", 3)[2].decode() if sql.startswith(b"INSERT")
                                 else sql.split(b" ", 2)[1].decode())
            if sql.startswith(b"COMMIT") and self.wrote and os.path.exists(ARGS.arm_file):
                with COUNT_LOCK:
                    COUNT[0] += 1
                    n = COUNT[0]
                self.wrote = False
                if n in ARGS.lose_commit:
                    log("commit %d %s" % (n, ",".join(self.tags)))
                    break
                if n in ARGS.lose_answer:
                    with self.lock:
                        self.lose_answer = n
                    log("answer %d %s" % (n, ",".join(self.tags)))
            try:
                self.server.sendall(msg)
            except OSError:
                break
        self.close()

    def server_to_client(self):
        group = []  # the answers up to the next ReadyForQuery, sent together
        started = False  # the startup's answers (authentication) go at once
        while True:
            m = read_message(self.server)
            if m is None:
                break
            kind, msg = m
            if (not started or kind == b"A") and not group:  # a notification comes alone
                started |= kind == b"Z"
                if not self.send(msg):
                    break
                continue
            group.append(msg)
            if kind == b"C" and msg[5:].startswith(b"COMMIT\0"):
                with self.lock:
                    lost = self.lose_answer is not None
                if lost:  # committed: the client never learns it
                    break
            if kind == b"Z":
                if not self.send(b"".join(group)):
                    break
                group = []
        self.close()

    def send(self, data):
        try:
            self.client.sendall(data)
            return True
        except OSError:
            return False


def main():
    host, port = ARGS.target.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection((host, int(port)))
        except OSError:
            client.close()
            continue
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = Link(client, server)
        threading.Thread(target=link.client_to_server, daemon=True).start()
        threading.Thread(target=link.server_to_client, daemon=True).start()


if __name__ == "__main__":
    main()
