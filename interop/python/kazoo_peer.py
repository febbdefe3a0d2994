"""Kazoo peer for shepherd's interop tests (Debian's python3-kazoo).

usage: kazoo_peer.py MODE PATH CONNECTS SECONDS HOLD_MS TIMEOUT_S

MODE is lock (Kazoo's Lock, default constructor), election (Kazoo's
Election), wlock (Kazoo's WriteLock) or semaphore (Kazoo's Semaphore with
max_leases 3). (Kazoo 2.8's ReadLock is not run: it
waits for the last __lock__ node in the whole line, even one queued behind
it, which waits for it in turn: a reader and a writer queued behind it
deadlock until one times out, with Kazoo alone.) CONNECTS is one connect string per
client, separated by ';' (each client its own session). Every client
contends on PATH for SECONDS, holding HOLD_MS each time, and every fifth
time twenty times longer (so that the test's faults can hit a holder). Lines on stdout,
times on CLOCK_MONOTONIC (time.monotonic_ns), which the Go test reads too:

  READY           every client connected; the run starts at the line GO
                  on stdin
  G <id> <ns> w   granted (written after the recipe returned)
  R <id> <ns>     about to release (written before the release)
  L <id> <ns>     the client's state left CONNECTED (the hold may be lost)
  E <id> <error>  an acquisition failed
  DONE grants=<n>
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

out_lock = threading.Lock()


def say(*words):
    with out_lock:
        sys.stdout.write(" ".join(str(w) for w in words) + "\n")
        sys.stdout.flush()


def main():
    mode, path, connects, seconds, hold_ms, timeout_s = sys.argv[1:7]
    seconds, hold = float(seconds), float(hold_ms) / 1000
    hosts = connects.split(";")
    grants = [0] * len(hosts)
    clients = []
    for i, h in enumerate(hosts):
        c = KazooClient(hosts=h, timeout=float(timeout_s))
        c.start(timeout=30)
        clients.append(c)
    # The run's length counts from the test's GO, every client of every
    # party connected (as CuratorPeer.java's).
    say("READY")
    go = sys.stdin.readline().strip()
    if go != "GO":
        raise SystemExit("expected GO on stdin, got %r" % go)
    deadline = time.monotonic() + seconds

    def client(i):
        ident = "py-%d" % i
        c = clients[i]
        lost = threading.Event()

        def listener(state):
            # Kazoo's connection thread: no blocking here.
            if state != KazooState.CONNECTED:
                say("L", ident, time.monotonic_ns())
                lost.set()
            return False

        c.add_listener(listener)

        def held():
            say("G", ident, time.monotonic_ns(), "w")
            grants[i] += 1
            # The work done under the lock (cut by a loss).
            lost.wait(hold * 20 if grants[i] % 5 == 0 else hold)
            say("R", ident, time.monotonic_ns())

        while time.monotonic() < deadline:
            if c.state != KazooState.CONNECTED:
                time.sleep(0.05)  # waiting for Kazoo's reconnection (a new session after an expiry)
                continue
            lost.clear()
            try:
                if mode == "election":
                    e = c.Election(path, ident)
                    t = threading.Timer(max(0.0, deadline - time.monotonic()), e.cancel)
                    t.start()
                    try:
                        e.run(held)  # returns once held has returned
                    finally:
                        t.cancel()
                    continue
                if mode == "semaphore":
                    lk = c.Semaphore(path, ident, max_leases=3)
                elif mode == "wlock":
                    lk = c.WriteLock(path, ident)
                else:
                    lk = c.Lock(path, ident)
                if not lk.acquire(timeout=max(0.1, deadline - time.monotonic())):
                    continue
                try:
                    held()
                finally:
                    lk.release()
            except Exception as ex:  # noqa: BLE001 - a lost session, a cancel: go again
                if time.monotonic() < deadline:
                    say("E", ident, repr(ex).replace("\n", " "))
                    time.sleep(0.05)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(hosts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    say("DONE grants=%d" % sum(grants))
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001
            pass


if __name__ == "__main__":
    main()
