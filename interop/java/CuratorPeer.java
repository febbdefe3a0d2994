// CuratorPeer is the Curator peer of shepherd's interop tests under faults
// (Debian's libcurator-recipes-java), speaking the protocol of
// python/kazoo_peer.py. Usage:
//   java CuratorPeer MODE PATH CONNECTS SECONDS HOLD_MS TIMEOUT_S
// MODE is mutex (InterProcessMutex), rw (InterProcessReadWriteLock: client 1
// takes the read lock, the others the write lock), semaphore
// (InterProcessSemaphoreV2, maxLeases 3), latch (LeaderLatch) or selector
// (LeaderSelector: every client leads until SECONDS end). CONNECTS is one
// connect string per client, separated by ';' (each client its own session,
// so the test can put each behind a proxy of its own). Every client contends
// on PATH for SECONDS, holding HOLD_MS each time and every fifth time twenty
// times longer. Lines on stdout, times on CLOCK_MONOTONIC (System.nanoTime
// reads it on Linux), which the Go test reads too:
//   READY            every client connected; the run starts at the
//                    line GO on stdin
//   G <id> <ns> w|r  granted (written after the recipe returned)
//   R <id> <ns>      about to release (written before the release)
//   L <id> <ns>      the client's state left CONNECTED (the hold may be lost)
//   E <id> <error>   an acquisition failed
//   DONE grants=<n>
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.curator.framework.*;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryForever;

public class CuratorPeer {
    static final Object out = new Object();
    static final AtomicInteger grants = new AtomicInteger();

    static void say(String s) {
        synchronized (out) {
            System.out.println(s);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0], path = args[1];
        String[] hosts = args[2].split(";");
        double seconds = Double.parseDouble(args[3]);
        long hold = Long.parseLong(args[4]);
        int timeout = (int) (Double.parseDouble(args[5]) * 1000);
        CuratorFramework[] cs = new CuratorFramework[hosts.length];
        for (int i = 0; i < hosts.length; i++) {
            cs[i] = CuratorFrameworkFactory.builder().connectString(hosts[i]).sessionTimeoutMs(timeout)
                    .connectionTimeoutMs(timeout).retryPolicy(new RetryForever(50)).build();
            cs[i].start();
            if (!cs[i].blockUntilConnected(30, TimeUnit.SECONDS)) throw new Exception("not connected in 30s");
        }
        // The run's length counts from the test's GO, every client of
        // every party connected: a JVM slow to start and connect on a
        // loaded machine once spent a whole 3 s run before its first
        // acquire, and one started before another's slow start would
        // contend alone.
        say("READY");
        String go = new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        if (go == null || !go.equals("GO")) throw new Exception("expected GO on stdin, got " + go);
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        Thread[] ts = new Thread[hosts.length];
        for (int i = 0; i < hosts.length; i++) {
            final int n = i;
            ts[i] = new Thread(() -> client(mode, path, cs[n], n, deadline, hold));
            ts[i].setDaemon(true);
            ts[i].start();
        }
        for (Thread t : ts) t.join((long) (seconds * 1000) + 60000);
        say("DONE grants=" + grants.get());
        for (CuratorFramework c : cs) c.close();
        System.exit(0);
    }

    static void client(String mode, String path, CuratorFramework c, int n, long deadline, long hold) {
        String id = "j-" + n;
        AtomicReference<CountDownLatch> lost = new AtomicReference<>(new CountDownLatch(1));
        c.getConnectionStateListenable().addListener((cl, state) -> {
            if (state != ConnectionState.CONNECTED && state != ConnectionState.RECONNECTED) {
                say("L " + id + " " + System.nanoTime());
                lost.get().countDown();
            }
        });
        boolean read = mode.equals("rw") && n == 1;
        int[] mine = {0};
        Runnable held = () -> {
            say("G " + id + " " + System.nanoTime() + (read ? " r" : " w"));
            grants.incrementAndGet();
            mine[0]++;
            try {
                // The work done under the lock (cut by a loss).
                lost.get().await(mine[0] % 5 == 0 ? 20 * hold : hold, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            say("R " + id + " " + System.nanoTime());
        };
        if (mode.equals("selector")) {
            selector(c, path, id, deadline);
            return;
        }
        InterProcessLock lock = null;
        InterProcessSemaphoreV2 sem = null;
        if (mode.equals("mutex")) lock = new InterProcessMutex(c, path);
        else if (mode.equals("rw")) {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
            lock = read ? rw.readLock() : rw.writeLock();
        } else if (mode.equals("semaphore")) sem = new InterProcessSemaphoreV2(c, path, 3);
        while (System.nanoTime() < deadline) {
            if (!c.getZookeeperClient().isConnected()) {
                sleep(50); // waiting for Curator's reconnection (a new session after an expiry)
                continue;
            }
            lost.set(new CountDownLatch(1));
            long left = Math.max(100, (deadline - System.nanoTime()) / 1000000);
            try {
                if (mode.equals("latch")) {
                    LeaderLatch l = new LeaderLatch(c, path, id);
                    l.start();
                    try {
                        if (l.await(left, TimeUnit.MILLISECONDS)) held.run();
                    } finally {
                        l.close();
                    }
                } else if (sem != null) {
                    Lease l = sem.acquire(left, TimeUnit.MILLISECONDS);
                    if (l == null) continue;
                    try {
                        held.run();
                    } finally {
                        sem.returnLease(l);
                    }
                } else {
                    if (!lock.acquire(left, TimeUnit.MILLISECONDS)) continue;
                    try {
                        held.run();
                    } finally {
                        lock.release();
                    }
                }
            } catch (Exception e) { // a lost session: go again
                if (System.nanoTime() < deadline) {
                    say("E " + id + " " + String.valueOf(e).replace('\n', ' '));
                    sleep(50);
                }
            }
        }
    }

    // selector leads with a LeaderSelector until the deadline (for the
    // refusal test: shepherd's election must refuse its lock- nodes).
    static void selector(CuratorFramework c, String path, String id, long deadline) {
        CountDownLatch done = new CountDownLatch(1);
        LeaderSelector s = new LeaderSelector(c, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework cl) throws Exception {
                say("G " + id + " " + System.nanoTime() + " w");
                grants.incrementAndGet();
                long left = (deadline - System.nanoTime()) / 1000000;
                if (left > 0) Thread.sleep(left); // leading until the deadline is the point
                say("R " + id + " " + System.nanoTime());
                done.countDown();
            }
        });
        s.setId(id);
        s.start();
        try {
            done.await((deadline - System.nanoTime()) / 1000000 + 10000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        s.close();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
