// Package zktest starts real Apache ZooKeeper servers for tests, the way
// Curator's TestingServer and TestingCluster do for Java: a standalone server or
// an ensemble on loopback with free ports (drawn below the kernel's ephemeral
// range and claimed with lock files in $TMPDIR/zktest-ports, so that clusters
// started at once by parallel package tests never share one), data in a
// temporary directory (tmpfs where available), and the server's output
// captured to a file a failing test can show.
//
// It also injects faults on purpose: per-node Stop, Kill and Restart, session
// expiry on demand (ExpireSession), a stolen connection (DisconnectSession),
// a fault Proxy that severs, refuses and stalls client connections, and a
// follower that lags behind its leader (WithFollowerLag, LagFollower: it
// serves reads from before what the others have committed).
//
// WithTLS starts servers that serve clients over TLS only, with a throw-away
// CA (NewCA) whose certificates a test can issue to clients: other
// principals, expired ones, or from a wrong CA.
//
// ZooKeeper is found through the ZOOKEEPER_CLASSPATH environment variable, else
// Debian's /usr/share/java/zookeeper.jar (package "zookeeper"). Every process
// started here is killed when the test (or TestMain's Close) ends, and, on
// Linux, when the test binary itself dies.
//
// Servers start from a class-data archive of ZooKeeper's classes (Java's
// CDS), made by the first start on the machine and kept in the user's
// cache directory (shepherd-zktest/, one file per java binary and
// classpath): an unused server's whole life then takes about a quarter
// less CPU and a fifth less time to serve (BenchmarkServerStart, make
// bench-start). A start that cannot make or use one starts without it.
package zktest
