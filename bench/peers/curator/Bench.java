// The Curator peer of shepherd's benchmark suite (bench/, `make bench`).
//
// Compiled at bench time with javac against Debian's Curator jars
// (libcurator-recipes-java); see bench/external.go. Two ways to run it:
//
//   java -cp <dir>:<curator classpath> Bench --serve
//       speaks the runner's JSON-lines protocol on stdin/stdout (see
//       bench/subprocess.go): prepare (a spec) -> ready, start -> started
//       (W8 only), go -> result, close -> closed, quit.
//   java ... Bench --workload W2 --connect 127.0.0.1:2181 --path /b/w2 [--sessions 16 ...]
//       runs once and prints one JSON result line (for trying it by hand;
//       the path must exist).
//
// The workloads and metrics are the same as the Go and Python drivers'
// (bench/spec.go): W1 uncontended InterProcessMutex, W2 contended mutex with
// an in-process exclusion check, W3 InterProcessSemaphoreV2, W4 LeaderLatch
// handoffs, W5 a chain of handoffs through 50 queued waiters, W6 a stalled
// leader, W8 a rolling restart (InterProcessMutex holders and LeaderLatch
// candidates riding through it).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class Bench {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
            if (a.equals("--serve")) {
                opts.put("serve", "true");
            } else if (i + 1 < args.length) {
                opts.put(a.substring(2).replace('-', '_'), args[++i]);
            } else {
                throw new IllegalArgumentException("missing value for " + a);
            }
        }
        if (opts.containsKey("serve")) {
            serve();
            return;
        }
        Workload w = Workload.create(new Spec(opts));
        try {
            w.prepare();
            OUT.println(w.run().json());
        } finally {
            w.close();
        }
        System.exit(0);
    }

    /** The runner's protocol: one command per stdin line, one answer per command. */
    private static void serve() throws Exception {
        OUT.println(obj("event", "hello", "peer", "curator", "version", curatorVersion()));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Workload w = null;
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String cmd = "?";
            try {
                Map<String, String> m = Json.parseFlat(line);
                cmd = m.getOrDefault("cmd", "?");
                switch (cmd) {
                    case "prepare":
                        if (w != null) {
                            w.close();
                        }
                        w = Workload.create(new Spec(m));
                        w.prepare();
                        OUT.println(obj("event", "ready"));
                        break;
                    case "start":
                        if (w == null) {
                            throw new IllegalStateException("start without a prepared run");
                        }
                        w.start();
                        OUT.println(obj("event", "started"));
                        break;
                    case "go":
                        if (w == null) {
                            throw new IllegalStateException("go without a prepared run");
                        }
                        OUT.println(w.run().json());
                        break;
                    case "close":
                        if (w != null) {
                            Workload c = w;
                            w = null;
                            c.close();
                        }
                        OUT.println(obj("event", "closed"));
                        break;
                    case "quit":
                        if (w != null) {
                            w.close();
                        }
                        System.exit(0);
                        return;
                    default:
                        throw new IllegalArgumentException("unknown command " + cmd);
                }
            } catch (Throwable t) {
                t.printStackTrace(System.err);
                OUT.println(obj("event", "error", "error", cmd + ": " + t));
            }
        }
        if (w != null) {
            w.close();
        }
        System.exit(0);
    }

    private static String curatorVersion() {
        Package p = CuratorFramework.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v == null ? "5.4.0 (Debian)" : v;
    }

    // ---------------------------------------------------------------- spec

    static final class Spec {
        final String workload, connect, path, connects, faultUrl;
        final int sessions, cycles, leases, sessionTimeoutMs;
        final double seconds, holdMs, termMs, graceS;

        Spec(Map<String, String> m) {
            workload = req(m, "workload");
            connect = req(m, "connect");
            path = req(m, "path");
            connects = m.getOrDefault("connects", "");
            faultUrl = m.getOrDefault("fault_url", "");
            sessions = (int) num(m, "sessions", 16);
            cycles = (int) num(m, "cycles", 1000);
            leases = (int) num(m, "leases", 4);
            sessionTimeoutMs = (int) num(m, "session_timeout_ms", 30000);
            seconds = num(m, "seconds", 3);
            holdMs = num(m, "hold_ms", 10);
            termMs = num(m, "term_ms", 20);
            graceS = num(m, "grace_s", 30);
        }

        private static String req(Map<String, String> m, String k) {
            String v = m.get(k);
            if (v == null || v.isEmpty()) {
                throw new IllegalArgumentException("spec needs " + k);
            }
            return v;
        }

        private static double num(Map<String, String> m, String k, double def) {
            String v = m.get(k);
            return v == null || v.isEmpty() ? def : Double.parseDouble(v);
        }

        long graceMs() {
            return (long) (graceS * 1000);
        }

        long deadlineNanos(long start) {
            return start + (long) (seconds * 1e9);
        }
    }

    // -------------------------------------------------------------- result

    static final class Result {
        int ops;
        double elapsedS;
        final Map<String, Double> metrics = new LinkedHashMap<>();

        String json() {
            StringBuilder b = new StringBuilder();
            b.append("{\"event\":\"result\",\"ops\":").append(ops)
                    .append(",\"elapsed_s\":").append(Json.num(elapsedS)).append(",\"metrics\":{");
            boolean first = true;
            for (Map.Entry<String, Double> e : metrics.entrySet()) {
                if (e.getValue() == null || e.getValue().isNaN() || e.getValue().isInfinite()) {
                    continue;
                }
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append(Json.str(e.getKey())).append(':').append(Json.num(e.getValue()));
            }
            return b.append("}}").toString();
        }

        /** Sets p50/p99 (µs, nearest rank, like bench.Percentile) of latencies in ns. */
        void latencies(LongList ns) {
            if (ns.size() == 0) {
                return;
            }
            long[] a = ns.sorted();
            metrics.put("latency_p50_us", pct(a, 0.50) / 1e3);
            metrics.put("latency_p99_us", pct(a, 0.99) / 1e3);
        }

        static double pct(long[] sorted, double p) {
            int i = (int) Math.ceil(p * sorted.length) - 1;
            i = Math.max(0, Math.min(i, sorted.length - 1));
            return sorted[i];
        }
    }

    /** A growable list of longs, synchronized (threads add, the driver reads at the end). */
    static final class LongList {
        private long[] a = new long[1024];
        private int n;

        synchronized void add(long v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        synchronized int size() {
            return n;
        }

        synchronized long first() {
            return a[0];
        }

        synchronized long[] sorted() {
            long[] c = Arrays.copyOf(a, n);
            Arrays.sort(c);
            return c;
        }
    }

    /** Time-weighted level (leases in use). */
    static final class TimeWeighted {
        private final long start = System.nanoTime();
        private long last = start;
        private int cur;
        private double area; // level × ns

        synchronized int add(int d) {
            long now = System.nanoTime();
            area += (double) cur * (now - last);
            last = now;
            cur += d;
            return cur;
        }

        synchronized double mean() {
            long now = System.nanoTime();
            double a = area + (double) cur * (now - last);
            return now > start ? a / (now - start) : 0;
        }
    }

    // ----------------------------------------------------------- workloads

    abstract static class Workload {
        final Spec s;
        final List<CuratorFramework> clients = new ArrayList<>();
        final List<Thread> threads = new ArrayList<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        Workload(Spec s) {
            this.s = s;
        }

        static Workload create(Spec s) {
            switch (s.workload) {
                case "W1":
                    return new W1(s);
                case "W2":
                    return new W2(s);
                case "W3":
                    return new W3(s);
                case "W4":
                    return new W4(s);
                case "W6":
                    return new W6(s);
                case "W8":
                    return new W8(s);
                case "W9":
                    return new W9(s);
                case "W5":
                case "W7-10":
                    // W7 is W5's chain with a short line (see external.go
                    // for why not the long one).
                    return new W5(s);
                default:
                    throw new IllegalArgumentException("unknown workload " + s.workload);
            }
        }

        abstract void prepare() throws Exception;

        abstract Result run() throws Exception;

        /** W8: the measured part begins (the runner then restarts the servers). */
        void start() throws Exception {
            throw new IllegalStateException("start: " + s.workload + " has no start");
        }

        /** Opens n sessions (one CuratorFramework each), connecting concurrently. */
        List<CuratorFramework> connect(int n) throws Exception {
            String[] to = new String[n];
            Arrays.fill(to, s.connect);
            return connectTo(to);
        }

        /** One session per connect string. */
        List<CuratorFramework> connectTo(String[] to) throws Exception {
            int n = to.length;
            List<CuratorFramework> cs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                CuratorFramework c = CuratorFrameworkFactory.builder()
                        .connectString(to[i])
                        .sessionTimeoutMs(s.sessionTimeoutMs)
                        .connectionTimeoutMs(10000)
                        .retryPolicy(new ExponentialBackoffRetry(100, 3))
                        .build();
                clients.add(c);
                cs.add(c);
                c.start();
            }
            for (CuratorFramework c : cs) {
                if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("no session within 15s");
                }
            }
            return cs;
        }

        void spawn(String name, Runnable r) {
            Thread t = new Thread(() -> {
                try {
                    r.run();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, name);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }

        void join() throws Exception {
            long until = System.nanoTime() + (long) ((s.seconds + 2 * s.graceS) * 1e9);
            for (Thread t : threads) {
                long left = Math.max(1, (until - System.nanoTime()) / 1_000_000);
                t.join(left);
                if (t.isAlive()) {
                    throw new IllegalStateException(t.getName() + " still running after the grace period");
                }
            }
            threads.clear();
            check();
        }

        void check() throws Exception {
            Throwable t = failure.get();
            if (t != null) {
                throw new Exception("worker failed: " + t, t);
            }
        }

        void close() {
            for (Thread t : threads) {
                t.interrupt();
            }
            for (CuratorFramework c : clients) {
                try {
                    c.close();
                } catch (Throwable ignored) {
                    // closing anyway
                }
            }
            clients.clear();
            for (Thread t : threads) {
                try {
                    t.join(5000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            threads.clear();
        }
    }

    interface Body {
        void run(int i) throws Exception;
    }

    /**
     * Runs body on n threads until cycles operations were claimed or seconds
     * passed; each thread checks both before starting an operation, and an
     * operation once started completes (a contended line drains). Returns the
     * elapsed seconds.
     */
    static double loadLoop(Workload w, int n, Body body) throws Exception {
        AtomicLong tickets = new AtomicLong();
        long start = System.nanoTime();
        long deadline = w.s.deadlineNanos(start);
        for (int i = 0; i < n; i++) {
            final int id = i;
            w.spawn("load-" + i, () -> {
                try {
                    while (System.nanoTime() < deadline && tickets.incrementAndGet() <= w.s.cycles
                            && w.failure.get() == null) {
                        body.run(id);
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
        w.join();
        return (System.nanoTime() - start) / 1e9;
    }

    /** W1: one session, uncontended acquire+release cycles. */
    static final class W1 extends Workload {
        InterProcessMutex m;

        W1(Spec s) {
            super(s);
        }

        void prepare() throws Exception {
            m = new InterProcessMutex(connect(1).get(0), s.path);
        }

        Result run() throws Exception {
            LongList lat = new LongList();
            long start = System.nanoTime();
            long deadline = s.deadlineNanos(start);
            while (lat.size() < s.cycles && System.nanoTime() < deadline) {
                long t0 = System.nanoTime();
                if (!m.acquire(s.graceMs(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("uncontended acquire timed out");
                }
                lat.add(System.nanoTime() - t0);
                m.release();
            }
            Result r = new Result();
            r.ops = lat.size();
            r.elapsedS = (System.nanoTime() - start) / 1e9;
            r.metrics.put("ops_per_s", r.ops / r.elapsedS);
            r.latencies(lat);
            return r;
        }
    }

    /** W2: sessions contend for one mutex; exclusion checked in-process. */
    static final class W2 extends Workload {
        final List<InterProcessMutex> ms = new ArrayList<>();

        W2(Spec s) {
            super(s);
        }

        void prepare() throws Exception {
            for (CuratorFramework c : connect(s.sessions)) {
                ms.add(new InterProcessMutex(c, s.path));
            }
        }

        Result run() throws Exception {
            LongList lat = new LongList();
            AtomicInteger holders = new AtomicInteger();
            AtomicLong violations = new AtomicLong();
            long safetyMs = (long) (s.seconds * 1000) + s.graceMs();
            double el = loadLoop(this, ms.size(), i -> {
                InterProcessMutex m = ms.get(i);
                long t0 = System.nanoTime();
                if (!m.acquire(safetyMs, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("acquire timed out");
                }
                lat.add(System.nanoTime() - t0);
                if (holders.incrementAndGet() != 1) {
                    violations.incrementAndGet();
                }
                holders.decrementAndGet();
                m.release();
            });
            Result r = new Result();
            r.ops = lat.size();
            r.elapsedS = el;
            r.metrics.put("ops_per_s", r.ops / el);
            r.metrics.put("violations", (double) violations.get());
            r.latencies(lat);
            return r;
        }
    }

    /** W3: sessions share an InterProcessSemaphoreV2; each lease is held for hold_ms. */
    static final class W3 extends Workload {
        final List<InterProcessSemaphoreV2> sems = new ArrayList<>();

        W3(Spec s) {
            super(s);
        }

        void prepare() throws Exception {
            for (CuratorFramework c : connect(s.sessions)) {
                sems.add(new InterProcessSemaphoreV2(c, s.path, s.leases));
            }
        }

        Result run() throws Exception {
            LongList lat = new LongList();
            AtomicLong over = new AtomicLong();
            TimeWeighted inUse = new TimeWeighted();
            long safetyMs = (long) (s.seconds * 1000) + s.graceMs();
            long holdNs = (long) (s.holdMs * 1e6);
            double el = loadLoop(this, sems.size(), i -> {
                InterProcessSemaphoreV2 sem = sems.get(i);
                long t0 = System.nanoTime();
                Lease l = sem.acquire(safetyMs, TimeUnit.MILLISECONDS);
                if (l == null) {
                    throw new IllegalStateException("acquire timed out");
                }
                lat.add(System.nanoTime() - t0);
                if (inUse.add(1) > s.leases) {
                    over.incrementAndGet();
                }
                Thread.sleep(holdNs / 1_000_000, (int) (holdNs % 1_000_000)); // the work under the lease
                inUse.add(-1);
                sem.returnLease(l);
            });
            Result r = new Result();
            r.ops = lat.size();
            r.elapsedS = el;
            r.metrics.put("ops_per_s", r.ops / el);
            r.metrics.put("leases_in_use", inUse.mean());
            r.metrics.put("over_limit", (double) over.get());
            r.latencies(lat);
            return r;
        }
    }

    /** What W4 and W6 share: LeaderLatch candidates and who leads. */
    abstract static class Elections extends Workload {
        List<CuratorFramework> cs;
        LeaderLatch[] latches;
        final Object mon = new Object();
        int leader = -1;
        long electedAt;
        long elections;

        Elections(Spec s) {
            super(s);
        }

        void startLatch(int i) throws Exception {
            LeaderLatch l = new LeaderLatch(cs.get(i), s.path, "candidate-" + i);
            l.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    long now = System.nanoTime();
                    synchronized (mon) {
                        leader = i;
                        electedAt = now;
                        elections++;
                        mon.notifyAll();
                    }
                }

                @Override
                public void notLeader() {
                    lost(i);
                }
            });
            latches[i] = l;
            l.start();
        }


        /** Starts a candidate on each session and waits for the first leader. */
        void campaign(List<CuratorFramework> sessions) throws Exception {
            cs = sessions;
            latches = new LeaderLatch[cs.size()];
            for (int i = 0; i < cs.size(); i++) {
                startLatch(i);
            }
            synchronized (mon) {
                if (!awaitElection(0, s.graceMs())) {
                    throw new IllegalStateException("no first leader");
                }
            }
        }

        /** Called when candidate i's latch says it may have lost leadership. */
        void lost(int i) {
        }

        /** Waits until elections passes seen; returns false on timeout. Holds mon. */
        boolean awaitElection(long seen, long timeoutMs) throws InterruptedException {
            long until = System.nanoTime() + timeoutMs * 1_000_000;
            while (elections == seen) {
                long left = (until - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return false;
                }
                mon.wait(left);
            }
            return true;
        }

        @Override
        void close() {
            if (latches != null) {
                for (LeaderLatch l : latches) {
                    try {
                        if (l != null && l.getState() == LeaderLatch.State.STARTED) {
                            l.close();
                        }
                    } catch (Throwable ignored) {
                        // closing anyway
                    }
                }
            }
            super.close();
        }
    }

    /**
     * W4: LeaderLatch candidates. The leader leads for term_ms, then closes its
     * latch (a graceful resign); the handoff is the time until another
     * candidate's isLeader() fires. The resigned candidate rejoins with a new
     * latch on the same session.
     */
    static final class W4 extends Elections {

        W4(Spec s) {
            super(s);
        }

        void prepare() throws Exception {
            campaign(connect(s.sessions));
        }

        Result run() throws Exception {
            LongList lat = new LongList();
            long start = System.nanoTime();
            long deadline = s.deadlineNanos(start);
            long termNs = (long) (s.termMs * 1e6);
            while (lat.size() < s.cycles && System.nanoTime() < deadline) {
                Thread.sleep(termNs / 1_000_000, (int) (termNs % 1_000_000));
                int old;
                long seen;
                synchronized (mon) {
                    old = leader;
                    seen = elections;
                }
                long t0 = System.nanoTime();
                latches[old].close();
                synchronized (mon) {
                    if (!awaitElection(seen, s.graceMs())) {
                        throw new IllegalStateException("no new leader after candidate " + old + " resigned");
                    }
                    if (leader == old) {
                        throw new IllegalStateException("resigned candidate " + old + " was elected again");
                    }
                    lat.add(electedAt - t0);
                }
                startLatch(old); // rejoin
            }
            Result r = new Result();
            r.ops = lat.size();
            r.elapsedS = (System.nanoTime() - start) / 1e9;
            r.metrics.put("ops_per_s", r.ops / r.elapsedS);
            r.latencies(lat);
            return r;
        }

    }


    /**
     * W6: LeaderLatch candidates, each session behind a fault proxy of its own
     * (spec connects, one per session). The leader's proxy is stalled through
     * the runner's fault endpoint (a crash, as the others see it); measured:
     * the time until another candidate's isLeader() fires, and whether the old
     * leader's notLeader() (Curator's loss signal, at SUSPENDED) came first.
     * The old leader is then healed and rejoins (its session has expired:
     * Curator makes a new one and the latch resets).
     */
    static final class W6 extends Elections {
        long[] lostAt;

        W6(Spec s) {
            super(s);
        }

        @Override
        void lost(int i) {
            long now = System.nanoTime();
            synchronized (mon) {
                if (lostAt[i] == 0) {
                    lostAt[i] = now;
                }
            }
        }

        void fault(String what, int i) throws Exception {
            java.net.HttpURLConnection c = (java.net.HttpURLConnection)
                    new java.net.URL(s.faultUrl + "/" + what + "?i=" + i).openConnection();
            c.setConnectTimeout(5000);
            c.setReadTimeout(5000);
            int code = c.getResponseCode();
            c.disconnect();
            if (code != 200) {
                throw new IllegalStateException("fault endpoint: " + what + " " + i + ": HTTP " + code);
            }
        }

        void prepare() throws Exception {
            if (s.connects.isEmpty() || s.faultUrl.isEmpty()) {
                throw new IllegalArgumentException("W6 needs connects and fault_url");
            }
            String[] to = s.connects.split(";");
            lostAt = new long[to.length];
            campaign(connectTo(to));
        }


        /** Waits (bounded) until every candidate is in line again. */
        void awaitLine(int healthy) throws Exception {
            long until = System.nanoTime() + s.graceMs() * 1_000_000;
            while (cs.get(healthy).getChildren().forPath(s.path).size() < cs.size()) {
                check();
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("the healed candidate did not rejoin in time");
                }
                Thread.sleep(10);
            }
        }

        Result run() throws Exception {
            LongList lat = new LongList();
            int first = 0;
            long start = System.nanoTime();
            long deadline = s.deadlineNanos(start);
            while (lat.size() < s.cycles && System.nanoTime() < deadline) {
                int old;
                long seen;
                synchronized (mon) {
                    old = leader;
                    seen = elections;
                    lostAt[old] = 0;
                }
                long t0 = System.nanoTime();
                fault("stall", old);
                int next;
                long at, lost;
                synchronized (mon) {
                    if (!awaitElection(seen, s.graceMs())) {
                        throw new IllegalStateException("no new leader after candidate " + old + " stalled");
                    }
                    if (leader == old) {
                        throw new IllegalStateException("stalled candidate " + old + " was elected again");
                    }
                    next = leader;
                    at = electedAt;
                    lost = lostAt[old];
                }
                lat.add(at - t0);
                if (lost != 0 && lost < at) {
                    first++;
                }
                fault("heal", old);
                awaitLine(next);
            }
            Result r = new Result();
            r.ops = lat.size();
            r.elapsedS = (System.nanoTime() - start) / 1e9;
            r.metrics.put("ops_per_s", r.ops / r.elapsedS);
            r.metrics.put("loss_signal_first", r.ops == 0 ? Double.NaN : (double) first / r.ops);
            r.latencies(lat);
            return r;
        }

    }

    /**
     * W5: one session holds the mutex while `sessions` waiters queue behind
     * it; on go the holder releases and each waiter in turn takes the mutex
     * and releases it at once. A handoff is measured from the previous
     * holder's release to the next waiter's acquire returning.
     */
    static final class W5 extends Workload {
        InterProcessMutex holder;
        CuratorFramework holderClient;
        final AtomicLong lastRelease = new AtomicLong();
        final LongList lat = new LongList();
        final AtomicInteger holders = new AtomicInteger();
        final AtomicLong violations = new AtomicLong();
        CountDownLatch done;

        W5(Spec s) {
            super(s);
        }

        void prepare() throws Exception {
            List<CuratorFramework> cs = connect(s.sessions + 1);
            holderClient = cs.get(0);
            holder = new InterProcessMutex(holderClient, s.path);
            if (!holder.acquire(s.graceMs(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("holder: acquire timed out");
            }
            done = new CountDownLatch(s.sessions);
            long safetyMs = (long) (s.seconds * 1000) + 2 * s.graceMs();
            for (int i = 1; i < cs.size(); i++) {
                InterProcessMutex m = new InterProcessMutex(cs.get(i), s.path);
                spawn("waiter-" + i, () -> {
                    try {
                        if (!m.acquire(safetyMs, TimeUnit.MILLISECONDS)) {
                            throw new IllegalStateException("waiter: acquire timed out");
                        }
                        if (holders.incrementAndGet() != 1) {
                            violations.incrementAndGet();
                        }
                        lat.add(System.nanoTime() - lastRelease.get());
                        lastRelease.set(System.nanoTime());
                        holders.decrementAndGet();
                        m.release();
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    } finally {
                        done.countDown();
                    }
                });
            }
            // Every waiter in line? Polling is fine before counting starts
            // (a watch would fire during the measured part).
            long until = System.nanoTime() + s.graceMs() * 1_000_000;
            // Counted from the path's Stat: a listing would load the server.
            while (holderClient.checkExists().forPath(s.path).getNumChildren() < s.sessions + 1) {
                check();
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("waiters not in line in time");
                }
                Thread.sleep(5);
            }
        }

        Result run() throws Exception {
            long start = System.nanoTime();
            lastRelease.set(start);
            holder.release();
            long limitMs = (long) (s.seconds * 1000) + s.graceMs();
            if (!done.await(limitMs, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("chain incomplete: " + lat.size() + " of " + s.sessions);
            }
            join();
            Result r = new Result();
            r.ops = lat.size();
            r.elapsedS = (System.nanoTime() - start) / 1e9;
            r.metrics.put("ops_per_s", r.ops / r.elapsedS);
            r.metrics.put("first_handoff_us", lat.first() / 1e3);
            r.metrics.put("violations", (double) violations.get());
            r.latencies(lat);
            return r;
        }
    }

    /**
     * W9: a rolling deploy. `sessions` LeaderLatch candidates of version 1
     * (a session each); each deploy replaces every one of them by one of the
     * next version, one at a time, oldest first: the new latch is started
     * and in line (its node among the path's children) before the old one is
     * closed (a graceful stop) with its client. Measured per deploy:
     * leadership changes (isLeader after the deploy's first leader), those
     * to an old version, and the leaderless time (from the leader's
     * notLeader, at its close, to the next isLeader).
     */
    static final class W9 extends Workload {
        final Object mon = new Object();
        String leader = "";
        long endedAt;
        int changes, toOld, version;
        long gapNs;

        W9(Spec s) {
            super(s);
        }

        final class Cand {
            final CuratorFramework c;
            final LeaderLatch l;

            Cand(int ver, int i) throws Exception {
                c = connect(1).get(0);
                String id = "v" + ver + "-" + i;
                l = new LeaderLatch(c, s.path, id);
                l.addListener(new LeaderLatchListener() {
                    @Override
                    public void isLeader() {
                        long now = System.nanoTime();
                        synchronized (mon) {
                            if (!leader.isEmpty() || changes > 0 || endedAt != 0) {
                                changes++;
                                if (ver < version) {
                                    toOld++;
                                }
                                if (endedAt != 0) {
                                    gapNs += now - endedAt;
                                }
                            }
                            leader = id;
                            mon.notifyAll();
                        }
                    }

                    @Override
                    public void notLeader() {
                        // The end is timed at the close (stop), the moment the
                        // leader is told: this listener may run after the next
                        // leader's isLeader.
                    }
                });
                l.start();
            }

            /** Closes the latch (a graceful stop): the leader is told at once. */
            void stop() throws Exception {
                synchronized (mon) {
                    if (l.hasLeadership()) {
                        endedAt = System.nanoTime();
                    }
                }
                l.close();
                c.close();
            }
        }

        List<Cand> old = new ArrayList<>();

        void awaitIn(CuratorFramework c, int n) throws Exception {
            long until = System.nanoTime() + s.graceMs() * 1_000_000;
            while (c.getChildren().forPath(s.path).size() < n) {
                if (System.nanoTime() > until) {
                    throw new IllegalStateException(n + " candidates never in line");
                }
                Thread.sleep(2);
            }
        }

        void prepare() throws Exception {
            version = 1;
            for (int i = 0; i < s.sessions; i++) {
                Cand c = new Cand(1, i);
                old.add(c);
                awaitIn(c.c, i + 1);
            }
            synchronized (mon) {
                long until = System.nanoTime() + s.graceMs() * 1_000_000;
                while (leader.isEmpty()) {
                    long left = (until - System.nanoTime()) / 1_000_000;
                    if (left <= 0) {
                        throw new IllegalStateException("no first leader");
                    }
                    mon.wait(left);
                }
                changes = 0;
                gapNs = 0;
                endedAt = 0;
            }
        }

        Result run() throws Exception {
            long start = System.nanoTime();
            long deadline = s.deadlineNanos(start);
            int deploys = 0;
            double changesSum = 0, toOldSum = 0, gapMs = 0;
            for (int v = 2; deploys < s.cycles && System.nanoTime() < deadline; v++) {
                synchronized (mon) {
                    version = v;
                    changes = 0;
                    toOld = 0;
                    gapNs = 0;
                }
                List<Cand> next = new ArrayList<>();
                for (int i = 0; i < old.size(); i++) {
                    Cand n = new Cand(v, i);
                    awaitIn(n.c, s.sessions + 1);
                    old.get(i).stop();
                    next.add(n);
                }
                String prefix = "v" + v + "-";
                synchronized (mon) {
                    long until = System.nanoTime() + s.graceMs() * 1_000_000;
                    while (!leader.startsWith(prefix)) {
                        long left = (until - System.nanoTime()) / 1_000_000;
                        if (left <= 0) {
                            throw new IllegalStateException("no leader of version " + v);
                        }
                        mon.wait(left);
                    }
                    changesSum += changes;
                    toOldSum += toOld;
                    gapMs += gapNs / 1e6;
                }
                old = next;
                deploys++;
            }
            Result r = new Result();
            r.ops = deploys;
            r.elapsedS = (System.nanoTime() - start) / 1e9;
            double n = Math.max(deploys, 1);
            r.metrics.put("leader_changes", changesSum / n);
            r.metrics.put("changes_to_old", toOldSum / n);
            r.metrics.put("leaderless_ms", gapMs / n);
            return r;
        }

        @Override
        void close() {
            for (Cand c : old) {
                try {
                    c.stop();
                } catch (Throwable ignored) {
                    // closing anyway
                }
            }
            super.close();
        }
    }

    /**
     * W8: a rolling restart. `sessions` lock holders, each on its own session
     * holding an InterProcessMutex of its own, and `sessions` LeaderLatch
     * candidates on one path, each on its own session. A holder treats
     * SUSPENDED and LOST as the loss of its lock, as Curator asks of
     * InterProcessMutex users: it releases it (the node's delete is
     * guaranteed, in the background) and acquires it again. A candidate's
     * loss signal is its latch's notLeader (at SUSPENDED; the latch resets
     * on RECONNECTED). "start" begins counting; the runner restarts the
     * servers one by one; "go" waits until every holder holds and a leader
     * leads again (twice, a second apart) and reports.
     */
    static final class W8 extends Workload {
        static final long NONE = Long.MIN_VALUE;
        final Object mon = new Object();
        final int n;
        final boolean[] hHas, hFree;
        final long[] hOffAt, lossSeq;
        int leaderWho = -1, last = -1;
        boolean lHas, lFree;
        long lOffAt = NONE;
        boolean measuring;
        long startNs;
        int holdsLost, changes, moves, leaderLosses, sessionsLost;
        long lockPausedNs, leaderPausedNs;
        volatile boolean stopping;
        final List<LeaderLatch> latches = new ArrayList<>();
        static final boolean TRACE = "1".equals(System.getenv("SHEPHERD_BENCH_TRACE"));

        static void trace(String what) {
            if (TRACE) {
                System.err.println(java.time.LocalTime.now() + " W8 " + what);
            }
        }

        W8(Spec s) {
            super(s);
            n = s.sessions;
            hHas = new boolean[n];
            hFree = new boolean[n];
            hOffAt = new long[n];
            lossSeq = new long[n];
            Arrays.fill(hOffAt, NONE);
        }

        void holderOn(int h) {
            synchronized (mon) {
                if (hFree[h]) {
                    return;
                }
                if (measuring && hOffAt[h] != NONE) {
                    lockPausedNs += System.nanoTime() - hOffAt[h];
                }
                if (hOffAt[h] != NONE) {
                    trace("holder " + h + " on after " + (System.nanoTime() - hOffAt[h]) / 1_000_000 + " ms");
                }
                hHas[h] = hFree[h] = true;
                hOffAt[h] = NONE;
                mon.notifyAll();
            }
        }

        void holderOff(int h) {
            synchronized (mon) {
                if (hFree[h]) {
                    hFree[h] = false;
                    hOffAt[h] = System.nanoTime();
                    trace("holder " + h + " off");
                }
                if (hHas[h]) {
                    hHas[h] = false;
                    if (measuring) {
                        holdsLost++;
                    }
                }
                lossSeq[h]++;
                mon.notifyAll();
            }
        }

        void leaderOn(int c) {
            synchronized (mon) {
                if (measuring) {
                    changes++;
                    if (c != last) {
                        moves++;
                    }
                    if (lOffAt != NONE) {
                        leaderPausedNs += System.nanoTime() - lOffAt;
                    }
                }
                last = leaderWho = c;
                lHas = lFree = true;
                lOffAt = NONE;
                mon.notifyAll();
            }
        }

        void leaderOff(int c) {
            synchronized (mon) {
                if (leaderWho != c) {
                    return;
                }
                if (lFree) {
                    lFree = false;
                    lOffAt = System.nanoTime();
                }
                if (lHas) {
                    lHas = false;
                    if (measuring) {
                        leaderLosses++;
                    }
                }
                mon.notifyAll();
            }
        }

        void sessionLost() {
            synchronized (mon) {
                if (measuring) {
                    sessionsLost++;
                }
            }
        }

        /** Holds mon. */
        boolean settled() {
            for (int h = 0; h < n; h++) {
                if (!hFree[h]) {
                    return false;
                }
            }
            return lFree;
        }

        void awaitSettled(String what) throws Exception {
            long until = System.nanoTime() + s.graceMs() * 1_000_000;
            synchronized (mon) {
                while (!settled()) {
                    check();
                    long left = (until - System.nanoTime()) / 1_000_000;
                    if (left <= 0) {
                        throw new IllegalStateException(what + ": holders and a leader not settled within the grace");
                    }
                    mon.wait(Math.min(left, 100));
                }
            }
        }

        void prepare() throws Exception {
            List<CuratorFramework> hs = connect(n);
            List<CuratorFramework> cs = connect(n);
            for (int i = 0; i < n; i++) {
                final int h = i;
                hs.get(h).getConnectionStateListenable().addListener((client, state) -> {
                    if (state == ConnectionState.LOST) {
                        sessionLost();
                    }
                    if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                        holderOff(h);
                    }
                });
                cs.get(h).getConnectionStateListenable().addListener((client, state) -> {
                    if (state == ConnectionState.LOST) {
                        sessionLost();
                    }
                });
            }
            for (int i = 0; i < n; i++) {
                final int h = i;
                final CuratorFramework c = hs.get(h);
                spawn("holder-" + h, () -> hold(c, h));
            }
            for (int i = 0; i < n; i++) {
                final int c = i;
                LeaderLatch l = new LeaderLatch(cs.get(c), s.path + "/election", "candidate-" + c);
                l.addListener(new LeaderLatchListener() {
                    @Override
                    public void isLeader() {
                        leaderOn(c);
                    }

                    @Override
                    public void notLeader() {
                        leaderOff(c);
                    }
                });
                latches.add(l);
                l.start();
            }
            awaitSettled("prepare");
        }

        /** Holder h: acquire; hold until SUSPENDED or LOST; release; again. */
        void hold(CuratorFramework c, int h) {
            InterProcessMutex m = new InterProcessMutex(c, s.path + "/lock-" + h);
            while (!stopping) {
                boolean got;
                try {
                    got = m.acquire(s.graceMs(), TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    got = false;
                }
                if (!got) {
                    if (sleep(50)) {
                        return;
                    }
                    continue;
                }
                long seq;
                synchronized (mon) {
                    seq = lossSeq[h];
                }
                holderOn(h);
                synchronized (mon) {
                    // Not connected now: a SUSPENDED may have come before
                    // seq was read; the lock is in doubt.
                    while (!stopping && lossSeq[h] == seq && c.getZookeeperClient().isConnected()) {
                        try {
                            mon.wait(100);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
                holderOff(h); // counted once, by whichever of the two comes first
                try {
                    m.release(); // the delete goes on in the background if it fails
                } catch (Exception ignored) {
                    // the lock is released as far as this holder goes
                }
            }
        }

        /** Sleeps ms; returns true if interrupted (the run closes). */
        static boolean sleep(long ms) {
            try {
                Thread.sleep(ms);
                return false;
            } catch (InterruptedException e) {
                return true;
            }
        }

        @Override
        void start() {
            synchronized (mon) {
                measuring = true;
                startNs = System.nanoTime();
            }
        }

        Result run() throws Exception {
            if (startNs == 0) {
                throw new IllegalStateException("go before start");
            }
            for (int k = 0; k < 2; k++) {
                awaitSettled("after the roll");
                Thread.sleep(1000);
            }
            awaitSettled("after the roll");
            Result r = new Result();
            synchronized (mon) {
                measuring = false;
                r.ops = 1;
                r.elapsedS = (System.nanoTime() - startNs) / 1e9;
                r.metrics.put("holds_lost", (double) holdsLost);
                r.metrics.put("leader_changes", (double) changes);
                r.metrics.put("leader_moves", (double) moves);
                r.metrics.put("leader_losses", (double) leaderLosses);
                r.metrics.put("sessions_lost", (double) sessionsLost);
                r.metrics.put("lock_paused_s", lockPausedNs / 1e9);
                r.metrics.put("leader_paused_s", leaderPausedNs / 1e9);
            }
            return r;
        }

        @Override
        void close() {
            stopping = true;
            synchronized (mon) {
                measuring = false;
                mon.notifyAll();
            }
            for (LeaderLatch l : latches) {
                try {
                    if (l.getState() == LeaderLatch.State.STARTED) {
                        l.close();
                    }
                } catch (Throwable ignored) {
                    // closing anyway
                }
            }
            super.close();
        }
    }

    // ---------------------------------------------------------------- JSON

    static String obj(String... kv) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i + 1 < kv.length; i += 2) {
            if (i > 0) {
                b.append(',');
            }
            b.append(Json.str(kv[i])).append(':').append(Json.str(kv[i + 1]));
        }
        return b.append('}').toString();
    }

    /** Just enough JSON: flat objects of strings, numbers, booleans and null. */
    static final class Json {
        static String str(String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"':
                        b.append("\\\"");
                        break;
                    case '\\':
                        b.append("\\\\");
                        break;
                    case '\n':
                        b.append("\\n");
                        break;
                    case '\r':
                        b.append("\\r");
                        break;
                    case '\t':
                        b.append("\\t");
                        break;
                    default:
                        if (c < 0x20) {
                            b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                }
            }
            return b.append('"').toString();
        }

        static String num(double d) {
            if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                return Long.toString((long) d);
            }
            return Double.toString(d); // e.g. 12.5 or 1.2345E7: both valid JSON
        }

        /** Parses {"k": v, ...} with scalar values into strings (null -> absent). */
        static Map<String, String> parseFlat(String s) {
            Map<String, String> m = new LinkedHashMap<>();
            int[] pos = {skip(s, 0)};
            expect(s, pos, '{');
            pos[0] = skip(s, pos[0]);
            if (peek(s, pos) == '}') {
                return m;
            }
            while (true) {
                pos[0] = skip(s, pos[0]);
                String k = string(s, pos);
                pos[0] = skip(s, pos[0]);
                expect(s, pos, ':');
                pos[0] = skip(s, pos[0]);
                String v;
                if (peek(s, pos) == '"') {
                    v = string(s, pos);
                } else {
                    int st = pos[0];
                    while (pos[0] < s.length() && ",} \t".indexOf(s.charAt(pos[0])) < 0) {
                        pos[0]++;
                    }
                    v = s.substring(st, pos[0]);
                    if (v.equals("null")) {
                        v = null;
                    }
                }
                if (v != null) {
                    m.put(k, v);
                }
                pos[0] = skip(s, pos[0]);
                char c = peek(s, pos);
                pos[0]++;
                if (c == '}') {
                    return m;
                }
                if (c != ',') {
                    throw new IllegalArgumentException("bad JSON at " + (pos[0] - 1) + ": " + s);
                }
            }
        }

        private static int skip(String s, int i) {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
            return i;
        }

        private static char peek(String s, int[] pos) {
            if (pos[0] >= s.length()) {
                throw new IllegalArgumentException("truncated JSON: " + s);
            }
            return s.charAt(pos[0]);
        }

        private static void expect(String s, int[] pos, char c) {
            if (peek(s, pos) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at " + pos[0] + ": " + s);
            }
            pos[0]++;
        }

        private static String string(String s, int[] pos) {
            expect(s, pos, '"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = peek(s, pos);
                pos[0]++;
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = peek(s, pos);
                pos[0]++;
                switch (e) {
                    case 'n':
                        b.append('\n');
                        break;
                    case 't':
                        b.append('\t');
                        break;
                    case 'r':
                        b.append('\r');
                        break;
                    case 'b':
                        b.append('\b');
                        break;
                    case 'f':
                        b.append('\f');
                        break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(pos[0], pos[0] + 4), 16));
                        pos[0] += 4;
                        break;
                    default:
                        b.append(e); // \" \\ \/
                }
            }
        }
    }
}
