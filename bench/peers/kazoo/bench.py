"""The Kazoo peer of shepherd's benchmark suite (bench/, `make bench`).

Runs with Debian's python3 and python3-kazoo (2.8.0): /usr/bin/python3, since
a pyenv python3 earlier on PATH cannot import Debian's packages. Two ways:

    python3 bench.py --serve
        speaks the runner's JSON-lines protocol on stdin/stdout (see
        bench/subprocess.go): prepare (a spec) -> ready, start -> started
        (W8 only), go -> result, close -> closed, quit.
    python3 bench.py --workload W2 --connect 127.0.0.1:2181 --path /b/w2 [--sessions 16 ...]
        runs once and prints one JSON result line (the path must exist).

The workloads and metrics are the same as the Go and Java drivers'
(bench/spec.go): W1 uncontended Lock, W2 contended Lock with an in-process
exclusion check, W3 Semaphore(max_leases), W4 Election handoffs, W5 a chain
of handoffs through 50 queued waiters, W6 a stalled leader, W8 a rolling
restart (Lock holders and Election candidates riding through it). One KazooClient (one session) per
contender, one thread per contender.
"""

import json
import logging
import math
import sys
import threading
import time
import urllib.request

import kazoo
from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError, ConnectionClosedError
from kazoo.protocol.states import KazooState

try:
    from kazoo.version import __version__ as KAZOO_VERSION
except ImportError:  # pragma: no cover
    KAZOO_VERSION = getattr(kazoo, "__version__", "unknown")


def now():
    return time.perf_counter_ns()


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Spec(object):
    def __init__(self, m):
        def need(k):
            v = m.get(k)
            if not v:
                raise ValueError("spec needs " + k)
            return v

        self.workload = need("workload")
        self.connect = need("connect")
        self.path = need("path")
        self.connects = m.get("connects", "")
        self.fault_url = m.get("fault_url", "")
        self.sessions = int(float(m.get("sessions", 16)))
        self.cycles = int(float(m.get("cycles", 1000)))
        self.leases = int(float(m.get("leases", 4)))
        self.session_timeout_ms = int(float(m.get("session_timeout_ms", 30000)))
        self.seconds = float(m.get("seconds", 3))
        self.hold_ms = float(m.get("hold_ms", 10))
        self.term_ms = float(m.get("term_ms", 20))
        self.grace_s = float(m.get("grace_s", 30))
        self.down_ms = float(m.get("down_ms", 0))

    def deadline(self, start):
        return start + int(self.seconds * 1e9)


def percentile(sorted_ns, p):
    """Nearest rank, like bench.Percentile."""
    i = int(math.ceil(p * len(sorted_ns))) - 1
    i = max(0, min(i, len(sorted_ns) - 1))
    return sorted_ns[i]


def result(ops, elapsed_s, metrics, lat_ns=None):
    if lat_ns:
        s = sorted(lat_ns)
        metrics["latency_p50_us"] = percentile(s, 0.50) / 1e3
        metrics["latency_p99_us"] = percentile(s, 0.99) / 1e3
    return {"event": "result", "ops": ops, "elapsed_s": elapsed_s, "metrics": metrics}


class TimeWeighted(object):
    """Time-weighted level (leases in use)."""

    def __init__(self):
        self.mu = threading.Lock()
        self.start = self.last = now()
        self.cur = 0
        self.area = 0.0

    def add(self, d):
        with self.mu:
            t = now()
            self.area += self.cur * (t - self.last)
            self.last = t
            self.cur += d
            return self.cur

    def mean(self):
        with self.mu:
            t = now()
            a = self.area + self.cur * (t - self.last)
            return a / (t - self.start) if t > self.start else 0.0


class Workload(object):
    def __init__(self, spec):
        self.s = spec
        self.clients = []
        self.threads = []
        self.failure = None
        self.fail_mu = threading.Lock()

    def connect(self, n):
        """Opens n sessions (one KazooClient each), concurrently."""
        return self.connect_to([self.s.connect] * n)

    # How a client reconnects: Kazoo's connection thread gives up (and the
    # client stops for good) once these tries are spent.
    connection_retry = {"max_tries": 3, "delay": 0.1, "backoff": 2}

    def connect_to(self, hosts):
        """Opens one session per connect string, concurrently."""
        cs = [KazooClient(hosts=h, timeout=self.s.session_timeout_ms / 1000.0,
                          connection_retry=dict(self.connection_retry),
                          command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2})
              for h in hosts]
        self.clients.extend(cs)
        errs = []

        def start(c):
            try:
                c.start(timeout=15)
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(e)

        ts = [threading.Thread(target=start, args=(c,)) for c in cs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errs:
            raise errs[0]
        return cs

    def spawn(self, name, fn):
        def body():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported by check()
                with self.fail_mu:
                    if self.failure is None:
                        self.failure = e
        t = threading.Thread(target=body, name=name, daemon=True)
        self.threads.append(t)
        t.start()

    def check(self):
        if self.failure is not None:
            raise RuntimeError("worker failed: %r" % (self.failure,))

    def join(self):
        until = time.monotonic() + self.s.seconds + 2 * self.s.grace_s
        for t in self.threads:
            t.join(max(0.001, until - time.monotonic()))
            if t.is_alive():
                raise RuntimeError(t.name + " still running after the grace period")
        self.threads = []
        self.check()

    def load_loop(self, n, body):
        """Runs body(i) on n threads until cycles operations were claimed or
        seconds passed; each thread checks both before it starts an
        operation, and an operation once started completes (a contended
        line drains). Returns the elapsed seconds."""
        tickets = [0]
        mu = threading.Lock()
        start = now()
        deadline = self.s.deadline(start)

        def claim():
            with mu:
                tickets[0] += 1
                return tickets[0] <= self.s.cycles

        def loop(i):
            while now() < deadline and self.failure is None and claim():
                body(i)

        for i in range(n):
            self.spawn("load-%d" % i, lambda i=i: loop(i))
        self.join()
        return (now() - start) / 1e9

    def close(self):
        self.stop_workers()
        for c in self.clients:
            try:
                c.stop()
                c.close()
            except Exception:  # noqa: BLE001 - closing anyway
                pass
        self.clients = []
        for t in self.threads:
            t.join(5)
        self.threads = []

    def stop_workers(self):
        pass

    def start(self):
        """W8: the measured part begins (the runner then restarts the servers)."""
        raise RuntimeError("start: %s has no start" % self.s.workload)


class W1(Workload):
    """One session, uncontended acquire+release cycles."""

    def prepare(self):
        c = self.connect(1)[0]
        self.lock = c.Lock(self.s.path, "w1")

    def run(self):
        lat = []
        start = now()
        deadline = self.s.deadline(start)
        while len(lat) < self.s.cycles and now() < deadline:
            t0 = now()
            if not self.lock.acquire(timeout=self.s.grace_s):
                raise RuntimeError("uncontended acquire timed out")
            lat.append(now() - t0)
            self.lock.release()
        el = (now() - start) / 1e9
        return result(len(lat), el, {"ops_per_s": len(lat) / el}, lat)


class W2(Workload):
    """Sessions contend for one Lock; exclusion checked in-process."""

    def prepare(self):
        self.locks = [c.Lock(self.s.path, "w2-%d" % i)
                      for i, c in enumerate(self.connect(self.s.sessions))]

    def run(self):
        lat = []
        mu = threading.Lock()
        holders = [0]
        violations = [0]
        safety = self.s.seconds + self.s.grace_s

        def body(i):
            lock = self.locks[i]
            t0 = now()
            if not lock.acquire(timeout=safety):
                raise RuntimeError("acquire timed out")
            d = now() - t0
            with mu:
                lat.append(d)
                holders[0] += 1
                if holders[0] != 1:
                    violations[0] += 1
            with mu:
                holders[0] -= 1
            lock.release()

        el = self.load_loop(len(self.locks), body)
        return result(len(lat), el, {"ops_per_s": len(lat) / el,
                                     "violations": violations[0]}, lat)


class W3(Workload):
    """Sessions share a Semaphore(max_leases); each lease is held hold_ms."""

    def prepare(self):
        self.sems = [c.Semaphore(self.s.path, "w3-%d" % i, max_leases=self.s.leases)
                     for i, c in enumerate(self.connect(self.s.sessions))]

    def run(self):
        lat = []
        mu = threading.Lock()
        over = [0]
        in_use = TimeWeighted()
        safety = self.s.seconds + self.s.grace_s
        hold = self.s.hold_ms / 1000.0

        def body(i):
            sem = self.sems[i]
            t0 = now()
            if not sem.acquire(timeout=safety):
                raise RuntimeError("acquire timed out")
            d = now() - t0
            if in_use.add(1) > self.s.leases:
                with mu:
                    over[0] += 1
            with mu:
                lat.append(d)
            time.sleep(hold)  # the work under the lease
            in_use.add(-1)
            sem.release()

        el = self.load_loop(len(self.sems), body)
        return result(len(lat), el, {"ops_per_s": len(lat) / el,
                                     "leases_in_use": in_use.mean(),
                                     "over_limit": over[0]}, lat)


class W4(Workload):
    """Election candidates. The leader leads for term_ms, then its leadership
    function returns (a graceful resign: Kazoo's Election releases its lock);
    the handoff is the time until another candidate's function is called. The
    resigned candidate runs the election again."""

    def prepare(self):
        self.campaign(self.connect(self.s.sessions))

    def campaign(self, cs):
        """Starts a candidate on each session and waits for the first leader."""
        self.cs = cs
        self.cond = threading.Condition()
        self.leader = -1
        self.elected_at = 0
        self.elections = 0
        self.stopping = False
        self.resign = [threading.Event() for _ in cs]  # set: stop leading
        self.elections_objs = [c.Election(self.s.path, "candidate-%d" % i) for i, c in enumerate(cs)]
        for i in range(len(cs)):
            self.spawn("candidate-%d" % i, lambda i=i: self.candidate(i))
        self.await_first_leader()

    def await_first_leader(self):
        with self.cond:
            if not self.cond.wait_for(lambda: self.elections > 0 or self.failure is not None,
                                      self.s.grace_s):
                raise RuntimeError("no first leader")
        self.check()

    def elected(self, i):
        t = now()
        with self.cond:
            self.leader = i
            self.elected_at = t
            self.elections += 1
            self.cond.notify_all()

    def candidate(self, i):
        def lead():
            self.elected(i)
            # Lead until told to resign (bounded: the run's own bound).
            self.resign[i].wait(self.s.seconds + 3 * self.s.grace_s)
            self.resign[i].clear()

        while not self.stopping:
            self.elections_objs[i].run(lead)

    def run(self):
        lat = []
        start = now()
        deadline = self.s.deadline(start)
        term = self.s.term_ms / 1000.0
        while len(lat) < self.s.cycles and now() < deadline:
            time.sleep(term)
            with self.cond:
                old, seen = self.leader, self.elections
            t0 = now()
            self.resign[old].set()
            with self.cond:
                if not self.cond.wait_for(lambda: self.elections > seen or self.failure is not None,
                                          self.s.grace_s):
                    raise RuntimeError("no new leader after candidate %d resigned" % old)
                self.check()
                if self.leader == old:
                    raise RuntimeError("resigned candidate %d was elected again" % old)
                lat.append(self.elected_at - t0)
        el = (now() - start) / 1e9
        return result(len(lat), el, {"ops_per_s": len(lat) / el}, lat)

    def stop_workers(self):
        self.stopping = True
        for e in getattr(self, "elections_objs", []):
            e.cancel()
        for ev in getattr(self, "resign", []):
            ev.set()
        for t in self.threads:
            t.join(5)


class W6(W4):
    """Election candidates, each session behind a fault proxy of its own
    (spec connects). The leader's proxy is stalled through the runner's fault
    endpoint (a crash, as the others see it); measured: the time until another
    candidate's function is called, and whether the old leader learned first
    that it may have lost leadership (Kazoo's signal: the client's state
    leaving CONNECTED, at SUSPENDED). The old leader is then healed and runs
    the election again (Kazoo makes a new session after the expiry)."""

    def prepare(self):
        if not self.s.connects or not self.s.fault_url:
            raise ValueError("W6 needs connects and fault_url")
        hosts = self.s.connects.split(";")
        self.lost_at = [0] * len(hosts)
        self.campaign(self.connect_to(hosts))
        # Before any fault: the loss signal only matters once run stalls one.
        for i, c in enumerate(self.cs):
            c.add_listener(lambda state, i=i: self.on_state(i, state))

    def on_state(self, i, state):
        # Called on Kazoo's connection thread: no blocking here.
        if state != KazooState.CONNECTED:
            t = now()
            with self.cond:
                if self.leader == i and self.lost_at[i] == 0:
                    self.lost_at[i] = t
            self.resign[i].set()
        return False  # stay registered

    def candidate(self, i):
        def lead():
            self.elected(i)
            if self.cs[i].state == KazooState.CONNECTED:
                self.resign[i].clear()
                if self.cs[i].state == KazooState.CONNECTED:
                    # Lead until the connection is in doubt (bounded).
                    self.resign[i].wait(self.s.seconds + 3 * self.s.grace_s)

        while not self.stopping:
            try:
                self.elections_objs[i].run(lead)
            except Exception:  # noqa: BLE001 - a lost session: run again
                time.sleep(0.05)

    def fault(self, what, i):
        with urllib.request.urlopen("%s/%s?i=%d" % (self.s.fault_url, what, i), timeout=5) as r:
            if r.status != 200:
                raise RuntimeError("fault endpoint: %s %d: HTTP %d" % (what, i, r.status))

    def run(self):
        lat = []
        first = 0
        start = now()
        deadline = self.s.deadline(start)
        while len(lat) < self.s.cycles and now() < deadline:
            with self.cond:
                old, seen = self.leader, self.elections
                self.lost_at[old] = 0
            t0 = now()
            self.fault("stall", old)
            with self.cond:
                if not self.cond.wait_for(lambda: (self.elections > seen and self.leader != old)
                                          or self.failure is not None, self.s.grace_s):
                    raise RuntimeError("no new leader after candidate %d stalled" % old)
                self.check()
                nxt, at, lost = self.leader, self.elected_at, self.lost_at[old]
            lat.append(at - t0)
            if lost and lost < at:
                first += 1
            self.fault("heal", old)
            until = time.monotonic() + self.s.grace_s
            while len(self.cs[nxt].get_children(self.s.path)) < len(self.cs):
                self.check()
                if time.monotonic() > until:
                    raise RuntimeError("the healed candidate did not rejoin in time")
                time.sleep(0.01)
        el = (now() - start) / 1e9
        m = {"ops_per_s": len(lat) / el}
        if lat:
            m["loss_signal_first"] = first / len(lat)
        return result(len(lat), el, m, lat)



class W5(Workload):
    """One session holds the Lock while `sessions` waiters queue behind it; on
    go the holder releases and each waiter in turn takes the lock and
    releases it at once. A handoff is measured from the previous holder's
    release to the next waiter's acquire returning."""

    def prepare(self):
        cs = self.connect(self.s.sessions + 1)
        self.holder_client = cs[0]
        self.holder = cs[0].Lock(self.s.path, "holder")
        if not self.holder.acquire(timeout=self.s.grace_s):
            raise RuntimeError("holder: acquire timed out")
        self.mu = threading.Lock()
        self.last_release = 0
        self.lat = []
        self.holders = 0
        self.violations = 0
        self.done = threading.Semaphore(0)
        safety = self.s.seconds + 2 * self.s.grace_s
        for i, c in enumerate(cs[1:], 1):
            lock = c.Lock(self.s.path, "waiter-%d" % i)
            self.spawn("waiter-%d" % i, lambda lock=lock: self.waiter(lock, safety))
        # Every waiter in line? Polling is fine before counting starts (a
        # watch would fire during the measured part).
        until = time.monotonic() + self.s.grace_s
        # Counted from the path's Stat: a listing would load the server.
        while self.holder_client.exists(self.s.path).numChildren < self.s.sessions + 1:
            self.check()
            if time.monotonic() > until:
                raise RuntimeError("waiters not in line in time")
            time.sleep(0.005)

    def waiter(self, lock, safety):
        try:
            if not lock.acquire(timeout=safety):
                raise RuntimeError("waiter: acquire timed out")
            with self.mu:
                self.holders += 1
                if self.holders != 1:
                    self.violations += 1
                self.lat.append(now() - self.last_release)
                self.last_release = now()
                self.holders -= 1
            lock.release()
        finally:
            self.done.release()

    def run(self):
        start = now()
        with self.mu:
            self.last_release = start
        self.holder.release()
        limit = time.monotonic() + self.s.seconds + self.s.grace_s
        for _ in range(self.s.sessions):
            if not self.done.acquire(timeout=max(0.001, limit - time.monotonic())):
                raise RuntimeError("chain incomplete: %d of %d" % (len(self.lat), self.s.sessions))
        self.join()
        el = (now() - start) / 1e9
        first = self.lat[0] / 1e3
        return result(len(self.lat), el, {"ops_per_s": len(self.lat) / el,
                                          "first_handoff_us": first,
                                          "violations": self.violations}, list(self.lat))


class W8(Workload):
    """A rolling restart. `sessions` lock holders, each on its own session
    holding a Lock of its own, and `sessions` Election candidates on one path,
    each on its own session. A holder treats SUSPENDED and LOST as the loss of
    its lock (its listener): it releases it (retried until the delete goes
    through) and acquires it again. A leader's loss signal is its client
    leaving CONNECTED (as in W6): its leadership function returns, and the
    candidate runs the election again. "start" begins counting; the runner
    restarts the servers one by one; "go" waits until every holder holds and
    a leader leads again (twice, a second apart) and reports.

    Kazoo's connection thread stops the client for good once its
    connection_retry is spent; a client that must ride through a rolling
    restart needs more tries than the other workloads use (here up to 60,
    at most 1 s apart)."""

    connection_retry = {"max_tries": 60, "delay": 0.1, "backoff": 2, "max_delay": 1}

    def prepare(self):
        n = self.s.sessions
        self.n = n
        self.cond = threading.Condition()
        self.stopping = False
        self.measuring = False
        self.start_ns = 0
        self.h_has = [False] * n
        self.h_free = [False] * n
        self.h_off_at = [None] * n
        self.loss_seq = [0] * n
        self.leader_who = -1
        self.last = -1
        self.l_has = self.l_free = False
        self.l_off_at = None
        self.holds_lost = self.changes = self.moves = self.leader_losses = self.sessions_lost = 0
        self.lock_paused_ns = self.leader_paused_ns = 0
        self.resign = [threading.Event() for _ in range(n)]
        self.locks = []
        hs = self.connect(n)
        cs = self.connect(n)
        self.hs, self.cs = hs, cs
        for h, c in enumerate(hs):
            c.add_listener(lambda state, h=h: self.on_holder_state(h, state))
        for i, c in enumerate(cs):
            c.add_listener(lambda state, i=i: self.on_candidate_state(i, state))
        self.elections_objs = [c.Election(self.s.path + "/election", "candidate-%d" % i)
                               for i, c in enumerate(cs)]
        for h in range(n):
            self.spawn("holder-%d" % h, lambda h=h: self.hold(h))
        for i in range(n):
            self.spawn("candidate-%d" % i, lambda i=i: self.candidate(i))
        self.await_settled("prepare")

    # Called on Kazoo's connection thread: no blocking here.
    def on_holder_state(self, h, state):
        if state == KazooState.LOST:
            self.session_lost()
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.holder_off(h)
        return False  # stay registered

    def on_candidate_state(self, i, state):
        if state == KazooState.LOST:
            self.session_lost()
        if state != KazooState.CONNECTED:
            self.resign[i].set()
        return False

    def session_lost(self):
        with self.cond:
            if self.measuring:
                self.sessions_lost += 1

    def holder_on(self, h):
        with self.cond:
            if self.h_free[h]:
                return
            if self.measuring and self.h_off_at[h] is not None:
                self.lock_paused_ns += now() - self.h_off_at[h]
            self.h_has[h] = self.h_free[h] = True
            self.h_off_at[h] = None
            self.cond.notify_all()

    def holder_off(self, h):
        with self.cond:
            if self.h_free[h]:
                self.h_free[h] = False
                self.h_off_at[h] = now()
            if self.h_has[h]:
                self.h_has[h] = False
                if self.measuring:
                    self.holds_lost += 1
            self.loss_seq[h] += 1
            self.cond.notify_all()

    def leader_on(self, i):
        with self.cond:
            if self.measuring:
                self.changes += 1
                if i != self.last:
                    self.moves += 1
                if self.l_off_at is not None:
                    self.leader_paused_ns += now() - self.l_off_at
            self.last = self.leader_who = i
            self.l_has = self.l_free = True
            self.l_off_at = None
            self.cond.notify_all()

    def leader_off(self, i):
        with self.cond:
            if self.leader_who != i:
                return
            if self.l_free:
                self.l_free = False
                self.l_off_at = now()
            if self.l_has:
                self.l_has = False
                if self.measuring:
                    self.leader_losses += 1
            self.cond.notify_all()

    def settled(self):
        return all(self.h_free) and self.l_free

    def await_settled(self, what):
        with self.cond:
            if not self.cond.wait_for(lambda: self.settled() or self.failure is not None, self.s.grace_s):
                raise RuntimeError(what + ": holders and a leader not settled within the grace")
        self.check()

    def release(self, lock):
        """Releases lock, retrying until the delete goes through (bounded)."""
        until = time.monotonic() + self.s.grace_s
        while not self.stopping and time.monotonic() < until:
            try:
                lock.release()
                return
            except Exception:  # noqa: BLE001 - disconnected: try again
                time.sleep(0.1)

    def hold(self, h):
        client = self.hs[h]
        lock = client.Lock("%s/lock-%d" % (self.s.path, h), "holder-%d" % h)
        self.locks.append(lock)
        while not self.stopping:
            try:
                got = lock.acquire(timeout=self.s.grace_s)
            except Exception:  # noqa: BLE001 - disconnected: try again
                got = False
            if not got:
                time.sleep(0.05)
                continue
            with self.cond:
                seq = self.loss_seq[h]
            self.holder_on(h)
            with self.cond:
                # Not connected now: a SUSPENDED may have come before seq was
                # read; the lock is in doubt.
                while (not self.stopping and self.loss_seq[h] == seq
                       and client.state == KazooState.CONNECTED):
                    self.cond.wait(0.1)
            self.holder_off(h)  # counted once, whichever of the two comes first
            self.release(lock)

    def candidate(self, i):
        client = self.cs[i]
        election = self.elections_objs[i]

        def lead():
            self.resign[i].clear()
            if client.state == KazooState.CONNECTED:
                self.leader_on(i)
                # Lead until the connection is in doubt (bounded).
                self.resign[i].wait(self.s.seconds + 3 * self.s.grace_s)
                self.leader_off(i)

        while not self.stopping:
            try:
                election.run(lead)
            except Exception:  # noqa: BLE001 - the release failed while disconnected
                self.release(election.lock)
                time.sleep(0.05)

    def start(self):
        with self.cond:
            self.measuring = True
            self.start_ns = now()

    def run(self):
        if not self.start_ns:
            raise RuntimeError("go before start")
        for _ in range(2):
            self.await_settled("after the roll")
            time.sleep(1)
        self.await_settled("after the roll")
        with self.cond:
            self.measuring = False
            el = (now() - self.start_ns) / 1e9
            m = {"holds_lost": self.holds_lost, "leader_changes": self.changes,
                 "leader_moves": self.moves, "leader_losses": self.leader_losses,
                 "sessions_lost": self.sessions_lost,
                 "lock_paused_s": self.lock_paused_ns / 1e9,
                 "leader_paused_s": self.leader_paused_ns / 1e9}
        return result(1, el, m)

    def stop_workers(self):
        self.stopping = True
        cond = getattr(self, "cond", None)
        if cond is not None:
            with cond:
                self.measuring = False
                cond.notify_all()
        for lock in getattr(self, "locks", []):
            lock.cancel()
        for e in getattr(self, "elections_objs", []):
            e.cancel()
        for ev in getattr(self, "resign", []):
            ev.set()
        for t in self.threads:
            t.join(5)

# W7 is W5's chain with a short and a long line.
class W9(Workload):
    """A rolling deploy: `sessions` Election candidates of version 1 (a
    session each); each deploy replaces every one of them by one of the next
    version, one at a time, oldest first: the new candidate runs and is in
    line (its node among the path's children) before the old one is stopped
    gracefully (its leadership function returns, its election is cancelled,
    its client stopped). Measured per deploy: leadership changes (a
    candidate's function called after the deploy's first leader), those to
    an old version, and the leaderless time (from the leader being told to
    stop to the next function call)."""

    def prepare(self):
        self.cond = threading.Condition()
        self.leader = ""
        self.ended_at = 0
        self.changes = self.to_old = 0
        self.gap_ns = 0
        self.version = 1
        self.counting = False
        self.old = []
        for i in range(self.s.sessions):
            self.old.append(self.candidate(1, i))
            self.await_in(self.old[-1]["client"], i + 1)
        with self.cond:
            if not self.cond.wait_for(lambda: self.leader != "" or self.failure is not None, self.s.grace_s):
                raise RuntimeError("no first leader")
        self.check()
        self.counting = True

    def candidate(self, ver, i):
        c = self.connect(1)[0]
        ident = "v%d-%d" % (ver, i)
        stop = threading.Event()
        e = c.Election(self.s.path, ident)

        def lead():
            t = now()
            with self.cond:
                if self.counting:
                    self.changes += 1
                    if ver < self.version:
                        self.to_old += 1
                    if self.ended_at:
                        self.gap_ns += t - self.ended_at
                self.leader = ident
                self.cond.notify_all()
            stop.wait(self.s.seconds + 3 * self.s.grace_s)
            with self.cond:
                self.ended_at = now()

        def body():
            while not stop.is_set():
                try:
                    e.run(lead)
                except CancelledError:
                    return  # stopped while it waited in line
                except ConnectionClosedError:
                    if stop.is_set():
                        return  # its client stopped as it let go
                    raise

        self.spawn("candidate-" + ident, body)
        return {"client": c, "election": e, "stop": stop, "thread": self.threads[-1]}

    def stop_candidate(self, cand):
        """A graceful stop: leadership given up (the function returns, the
        lock released), then the client stopped."""
        cand["stop"].set()
        cand["election"].cancel()
        cand["thread"].join(self.s.grace_s)
        cand["client"].stop()

    def await_in(self, c, n):
        until = time.monotonic() + self.s.grace_s
        while len(c.get_children(self.s.path)) < n:
            if time.monotonic() > until:
                raise RuntimeError("%d candidates never in line" % n)
            time.sleep(0.002)

    def run(self):
        start = now()
        deadline = self.s.deadline(start)
        deploys = 0
        changes = to_old = gap_ms = 0.0
        v = 2
        while deploys < self.s.cycles and now() < deadline:
            with self.cond:
                self.version = v
                self.changes = self.to_old = 0
                self.gap_ns = 0
            nxt = []
            for i, o in enumerate(self.old):
                n = self.candidate(v, i)
                self.await_in(n["client"], self.s.sessions + 1)
                self.stop_candidate(o)
                nxt.append(n)
            prefix = "v%d-" % v
            with self.cond:
                if not self.cond.wait_for(lambda: self.leader.startswith(prefix) or self.failure is not None,
                                          self.s.grace_s):
                    raise RuntimeError("no leader of version %d" % v)
                changes += self.changes
                to_old += self.to_old
                gap_ms += self.gap_ns / 1e6
            self.check()
            self.old = nxt
            deploys += 1
            v += 1
        el = (now() - start) / 1e9
        n = max(deploys, 1)
        return result(deploys, el, {"leader_changes": changes / n, "changes_to_old": to_old / n,
                                    "leaderless_ms": gap_ms / n})

    def stop_workers(self):
        for o in getattr(self, "old", []):
            o["stop"].set()
            o["election"].cancel()


WORKLOADS = {"W1": W1, "W2": W2, "W3": W3, "W4": W4, "W5": W5, "W6": W6, "W7-10": W5, "W7-1000": W5,
             "W8": W8, "W9": W9}


def create(spec):
    cls = WORKLOADS.get(spec.workload)
    if cls is None:
        raise ValueError("unknown workload " + spec.workload)
    return cls(spec)


def serve():
    emit({"event": "hello", "peer": "kazoo", "version": KAZOO_VERSION})
    w = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = "?"
        try:
            m = json.loads(line)
            cmd = m.get("cmd", "?")
            if cmd == "prepare":
                if w is not None:
                    w.close()
                w = create(Spec(m))
                w.prepare()
                emit({"event": "ready"})
            elif cmd == "start":
                if w is None:
                    raise RuntimeError("start without a prepared run")
                w.start()
                emit({"event": "started"})
            elif cmd == "go":
                if w is None:
                    raise RuntimeError("go without a prepared run")
                emit(w.run())
            elif cmd == "close":
                if w is not None:
                    c, w = w, None
                    c.close()
                emit({"event": "closed"})
            elif cmd == "quit":
                break
            else:
                raise ValueError("unknown command " + cmd)
        except Exception as e:  # noqa: BLE001 - reported to the runner
            logging.exception("command %s failed", cmd)
            emit({"event": "error", "error": "%s: %r" % (cmd, e)})
    if w is not None:
        w.close()


def main(argv):
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    if "--serve" in argv:
        serve()
        return 0
    opts = {}
    it = iter(argv)
    for a in it:
        if not a.startswith("--"):
            raise SystemExit("unexpected argument " + a)
        opts[a[2:].replace("-", "_")] = next(it)
    w = create(Spec(opts))
    try:
        w.prepare()
        emit(w.run())
    finally:
        w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
