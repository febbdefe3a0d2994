//go:build race

package main_test

// buildFlags are the flags TestMain builds the CLI with: the test's own
// build mode. Built with -race, as the test binary is, the CLI is linked
// from the packages go test has compiled already (built without it, it
// compiled the standard library and every package again, inside this
// package's test time: about 60 CPU-s on a fresh machine), and a data race
// in the CLI or its init fails the test that ran it (the race detector's
// exit status, 66).
var buildFlags = []string{"-race"}

// raceEnv is what the CLI's processes get in GORACE: no sleep at exit.
// The race runtime sleeps a second before a process exits (its
// atexit_sleep_ms), so CMD's init reported CMD's end a second late: a
// tick that ended within -drain was seen past it and run again
// (TestScheduleDrainRollingDeploy/past failed 4 of 4), and every one of
// the package's CLI runs took a second longer.
const raceEnv = "atexit_sleep_ms=0"
