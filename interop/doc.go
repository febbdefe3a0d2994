// Package interop proves that shepherd's recipes share paths with those of
// libraries no one here wrote, or refuse them: Apache Curator's
// InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2,
// LeaderLatch and LeaderSelector (java/CuratorPeer.java, compiled at test time
// against Debian's libcurator-recipes-java), Kazoo's Lock, WriteLock, Election
// and Semaphore (python/kazoo_peer.py, Debian's python3-kazoo), each as real
// processes under faults with one clock, and go-zookeeper's zk.Lock. It has
// only tests.
package interop
