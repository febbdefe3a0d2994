// Package bench is shepherd's benchmark suite: shepherd against its peers —
// Apache Curator (Java), Kazoo (Python), go-zookeeper's zk.Lock, and a
// minimal lock on raw go-zookeeper (the floor) — on the same ZooKeeper, in
// one run. `make bench` (or `go run ./bench/cmd/zkbench`) runs it;
// `make bench-quick` runs a shorter version; `go run ./bench/cmd/zkbench
// -only W8` runs the rolling restart alone.
//
// # Workloads
//
//   - W1: one session, uncontended mutex acquire+release cycles: cycles/s,
//     acquire p50/p99, requests per cycle.
//
//   - W2: 16 sessions contend for one mutex; each acquisition checks with an
//     in-process holder counter that nobody else holds it: acquisitions/s,
//     wait p50/p99, violations, requests per acquisition.
//
//   - W3: a semaphore with maxLeases 4 shared by 16 sessions that hold a
//     lease for 10 ms: acquisitions/s, time-weighted mean leases in use
//     (4 is the ideal), over-limit events, requests per acquisition.
//
//   - W4: 5 election candidates; the leader resigns gracefully and rejoins:
//     handoff p50/p99 (from the resignation to the next leader being told),
//     requests and watch notifications per handoff (the rejoin included).
//     shepherd runs it three ways: Campaign/Resign ("shepherd"), Run
//     resigning by ending its ctx and rejoining by calling Run again
//     ("shepherd-run"), and Run whose OnElected returns ("shepherd-return");
//     the table adds each variant's ratio over every other peer.
//     bench/cmd/handofftrace traces single handoffs across processes.
//
//   - W5: 50 waiters queued on a held mutex; the holder releases and each
//     waiter in turn takes and releases it: first-handoff latency (every
//     waiter queued), handoff p50/p99, watch notifications per release (1 for
//     a herd-free lock, up to the number of waiters for a herd).
//
//   - W7: scale: W5's chain with 10 waiters (W7-10), 1,000 (W7-1000;
//     300 with -quick) and 10,000 (W7-10000, the Go peers only; 1,000 with
//     -quick): a handoff should cost the same however long the line.
//     Besides requests and notifications per handoff, the bytes per
//     handoff and the whole drain's bytes, counted by the server (requests
//     received, responses and notifications sent). Every peer runs W7-10;
//     Curator does not run W7-1000 (see curatorWorkloads for why).
//
//   - W6: leader crash: 3 candidates, each behind a fault proxy (2 s session
//     timeout); the leader's connection is stalled: time until another
//     leads, and the share of crashes where the old leader's own loss signal
//     came first (Curator: LeaderLatch's notLeader; Kazoo: its client
//     leaving CONNECTED; a lock-based election cannot tell its leader). The
//     Java and Python drivers get one connect string per session and stall
//     their leader through a loopback HTTP endpoint (bench/faults.go), and
//     time everything on their own clock. go-zookeeper's zk.Lock is left
//     out: in this harness its waiters stayed blocked after the leader's
//     session expired (no new leader within the run's bound).
//
//   - W8: rolling restart: on a 3-node ensemble (its own, started after the
//     other workloads' standalone server is closed, unless -ensemble),
//     3 lock holders (each its own session and lock path, taking it again
//     after every loss) and 3 election candidates on one path (each its own
//     session) settle; then the runner restarts every server in turn, the
//     followers first and the leader last, each stopped for 1 s, two
//     rounds (one with -quick); the peer reports once every holder holds
//     and a leader leads again (and still does a second later). Measured:
//     holds lost (the lock holders' loss signals: shepherd's Lost; Curator's
//     and Kazoo's connection listener at SUSPENDED or LOST, which their
//     lock users must treat as a loss; go-zookeeper's zk.Lock has none, so
//     its holders' disconnects are counted as the losses its users would
//     have to assume), leadership changes (a candidate told it leads after
//     the first election, and how many of those moved to another
//     candidate; shepherd's Run, Curator's LeaderLatch isLeader, Kazoo's
//     Election whose leader steps down when its client leaves CONNECTED,
//     go-zookeeper's zk.Lock as W4 uses it), the leader's loss signals,
//     sessions lost, and the time the work stood still: the sum of every
//     pause (shepherd with session.PauseOnDisconnect, "shepherd-pause") or
//     of every loss to the next grant (the others; go-zookeeper: each
//     disconnect to the reconnect). Runs once, whatever the repetitions.
//     The server counters are not read (a restarted server starts them
//     from zero); the subprocess drivers get a "start" command that begins
//     the measured part before the runner restarts the servers.
//
//   - W9: rolling deploy (issue 38): Sessions election candidates of one
//     version (each its own session); each of Cycles deploys replaces every
//     one by a candidate of the next version, one at a time, the new one in
//     line before the old one stops gracefully, oldest first. Measured per
//     deploy: leadership changes, those to an old version, and the
//     leaderless milliseconds. shepherd by line order and
//     "shepherd-priority" (the version as priority, HandOverOnStop),
//     Curator's LeaderLatch, Kazoo's Election; not the floor nor
//     go-zookeeper's zk.Lock (no election API to stop gracefully by).
//
// Every load loop is bounded in count (Spec.Cycles) and time (Spec.Seconds);
// whatever is already waiting when the bound is reached completes, and every
// blocking call is bounded by a grace period beyond that.
//
// # Counting
//
// Requests come from the server: zk_packets_received in `mntr`, summed over
// the nodes, read when the server is quiet just before and just after the
// measured part of a run (its sessions are already open, and still open), less
// the packets of the reads themselves (calibrated). Pings are requests too: a
// go-zookeeper session pings every third of its session timeout whether busy
// or not (30 s sessions here: every 10 s), Java and Python clients only when
// idle, so per-operation counts may carry a few hundredths of noise. Watch
// notifications are the sum of the zk_sum_node_*_watch_count summaries
// (ZooKeeper 3.6+): the number of watchers each triggered event notified.
//
// # Peers
//
// A Peer prepares a run, runs its measured part, and closes it. Go peers run
// in-process (bench/internal/gopeers, where shepherd plugs in); Curator and
// Kazoo run as long-lived subprocesses speaking JSON lines (Subprocess), their
// drivers in bench/peers, embedded in the runner, the Java one compiled with
// javac into a cache directory at bench time. Runs are interleaved: in every
// repetition, each workload runs on each peer in turn, the order rotating.
package bench
