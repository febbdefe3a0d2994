// Package interop proves that shepherd's recipes exclude those of libraries
// no one here wrote when they share a path: Apache Curator's InterProcessMutex
// and LeaderLatch (a Java program compiled at test time against Debian's
// libcurator-recipes-java) and go-zookeeper's zk.Lock. It has only tests.
package interop
