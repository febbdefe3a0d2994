// Interop drives Apache Curator (Debian's libcurator-recipes-java) against the
// same ZooKeeper paths as shepherd, for the interop tests. Usage:
//   java Interop mutex|latch|rwwrite|semaphore CONNECT PATH CLIENTS ROUNDS
// (rwwrite: the write lock of an InterProcessReadWriteLock; a writer also
// checks that no reader's PATH-reader-* node exists while it holds;
// semaphore: InterProcessSemaphoreV2 with maxLeases 3, each holder marking
// itself with PATH-lease-<id> and checking there are at most 3 marks.)
// Each client is a thread with its own session. While holding the lock (or
// leadership) it creates the ephemeral node PATH-holder, which fails if anyone
// else (shepherd included) holds it too: a violation. It prints READY once
// connected, VIOLATION lines, and DONE acquisitions=N violations=M.
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.curator.framework.*;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class Interop {
    static final AtomicInteger acquisitions = new AtomicInteger();
    static final AtomicInteger violations = new AtomicInteger();

    public static void main(String[] args) throws Exception {
        String mode = args[0], connect = args[1], path = args[2];
        int clients = Integer.parseInt(args[3]), rounds = Integer.parseInt(args[4]);
        CuratorFramework[] cs = new CuratorFramework[clients];
        for (int i = 0; i < clients; i++) {
            cs[i] = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryNTimes(3, 100));
            cs[i].start();
            cs[i].blockUntilConnected(20, TimeUnit.SECONDS);
        }
        System.out.println("READY");
        System.out.flush();
        ExecutorService ex = Executors.newFixedThreadPool(clients);
        for (int i = 0; i < clients; i++) {
            final CuratorFramework c = cs[i];
            final String id = "java-" + i;
            ex.submit(() -> {
                try {
                    if (mode.equals("mutex")) mutex(c, path, id, rounds);
                    else if (mode.equals("rwwrite")) rwwrite(c, path, id, rounds);
                    else if (mode.equals("semaphore")) semaphore(c, path, id, rounds);
                    else latch(c, path, id, rounds);
                } catch (Exception e) {
                    System.out.println("ERROR " + id + " " + e);
                }
                return null;
            });
        }
        ex.shutdown();
        ex.awaitTermination(100, TimeUnit.SECONDS);
        for (CuratorFramework c : cs) c.close();
        System.out.println("DONE acquisitions=" + acquisitions.get() + " violations=" + violations.get());
        System.out.flush();
    }

    static void hold(CuratorFramework c, String path, String id, long ms) throws Exception {
        acquisitions.incrementAndGet();
        try {
            c.create().withMode(CreateMode.EPHEMERAL).forPath(path + "-holder", id.getBytes());
        } catch (KeeperException.NodeExistsException e) {
            violations.incrementAndGet();
            System.out.println("VIOLATION " + id + " granted while another holds");
            System.out.flush();
            return;
        }
        if (checkReaders) {
            String parent = path.substring(0, path.lastIndexOf('/'));
            String base = path.substring(path.lastIndexOf('/') + 1) + "-reader-";
            if (parent.isEmpty()) parent = "/";
            for (String child : c.getChildren().forPath(parent)) {
                if (child.startsWith(base)) {
                    violations.incrementAndGet();
                    System.out.println("VIOLATION " + id + " granted the write lock while " + child + " reads");
                    System.out.flush();
                }
            }
        }
        Thread.sleep(ms);
        c.delete().forPath(path + "-holder");
    }

    static volatile boolean checkReaders = false;

    static void semaphore(CuratorFramework c, String path, String id, int rounds) throws Exception {
        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(c, path, 3);
        String parent = path.substring(0, path.lastIndexOf('/'));
        String base = path.substring(path.lastIndexOf('/') + 1) + "-lease-";
        for (int r = 0; r < rounds; r++) {
            Lease l = sem.acquire(30, TimeUnit.SECONDS);
            if (l == null) throw new Exception("lease not acquired in 30s");
            try {
                acquisitions.incrementAndGet();
                c.create().withMode(CreateMode.EPHEMERAL).forPath(path + "-lease-" + id);
                int n = 0;
                for (String child : c.getChildren().forPath(parent)) if (child.startsWith(base)) n++;
                if (n > 3) {
                    violations.incrementAndGet();
                    System.out.println("VIOLATION " + id + " holds one of " + n + " leases");
                    System.out.flush();
                }
                Thread.sleep(5);
                c.delete().forPath(path + "-lease-" + id);
            } finally {
                sem.returnLease(l);
            }
        }
    }

    static void rwwrite(CuratorFramework c, String path, String id, int rounds) throws Exception {
        checkReaders = true;
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
        for (int r = 0; r < rounds; r++) {
            if (!rw.writeLock().acquire(30, TimeUnit.SECONDS)) throw new Exception("write lock not acquired in 30s");
            try {
                hold(c, path, id, 3);
            } finally {
                rw.writeLock().release();
            }
        }
    }

    static void mutex(CuratorFramework c, String path, String id, int rounds) throws Exception {
        InterProcessMutex m = new InterProcessMutex(c, path);
        for (int r = 0; r < rounds; r++) {
            if (!m.acquire(30, TimeUnit.SECONDS)) throw new Exception("lock not acquired in 30s");
            try {
                hold(c, path, id, 3);
            } finally {
                m.release();
            }
        }
    }

    static void latch(CuratorFramework c, String path, String id, int rounds) throws Exception {
        for (int r = 0; r < rounds; r++) {
            LeaderLatch l = new LeaderLatch(c, path, id);
            l.start();
            try {
                if (!l.await(30, TimeUnit.SECONDS)) throw new Exception("not elected in 30s");
                hold(c, path, id, 30);
            } finally {
                l.close();
            }
        }
    }
}
