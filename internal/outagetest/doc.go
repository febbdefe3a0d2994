// Package outagetest holds the suite's test that lasts longer than a
// minute (TestReleaseOutlivesLongOutage: a lock released during a 65 s
// outage is deleted when its session comes back), alone in a package.
//
// Why alone: the race detector fails every test running in a test binary
// when it reports a race, and upstream go-zookeeper's known lastZxid race
// (see the README) fires now and then wherever sessions with watches
// reconnect. make test runs again the tests that race alone failed; in a
// package of many tests running in parallel, a 70 s test was nearly always
// running when the race fired in another, and its run again, after
// everything else, set the suite's length. Here only its own sessions can
// mark it. make test (scripts/test.sh) runs it in the background from the
// start, beside the other packages: it waits out its outage using no CPU,
// where in the pool of two packages at once it held a place for 67 s.
package outagetest
