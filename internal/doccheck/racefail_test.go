package doccheck

import (
	"os/exec"
	"strings"
	"testing"
)

// racefail runs scripts/racefail.awk (make test's judge of which tests
// upstream go-zookeeper's data race alone failed) on a go test output.
func racefail(t *testing.T, out string) []string {
	t.Helper()
	cmd := exec.Command("awk", "-f", "../../scripts/racefail.awk")
	cmd.Stdin = strings.NewReader(out)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("awk: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// The subtests the race report alone failed are named level by level, a
// pattern a top-level test, with the names quoted for -run, each with the
// package it failed in (a test of the same name in another package is
// another test).
func TestRaceFailPatterns(t *testing.T) {
	got := racefail(t, `--- FAIL: TestHoldContract (45.00s)
    --- FAIL: TestHoldContract/fair (10.00s)
        --- FAIL: TestHoldContract/fair/TokenCost (3.00s)
            testing.go:1490: race detected during execution of test
    --- FAIL: TestHoldContract/rw.write (10.00s)
        --- FAIL: TestHoldContract/rw.write/FencedAnswerLost (3.00s)
            testing.go:1490: race detected during execution of test
--- FAIL: TestOther (1.00s)
    testing.go:1490: race detected during execution of test
FAIL
FAIL	github.com/shepherdzk/shepherd/mutex	50.0s
ok  	github.com/shepherdzk/shepherd/fence	1.0s
--- FAIL: TestHoldContract (45.00s)
    --- FAIL: TestHoldContract/nonfair (10.00s)
        testing.go:1490: race detected during execution of test
FAIL
FAIL	github.com/shepherdzk/shepherd/election	50.0s
`)
	want := map[string]bool{
		`github.com/shepherdzk/shepherd/mutex ^(TestHoldContract)$/^(fair|rw\.write)$/^(TokenCost|FencedAnswerLost)$`: true,
		`github.com/shepherdzk/shepherd/mutex ^(TestOther)$`:                                                          true,
		`github.com/shepherdzk/shepherd/election ^(TestHoldContract)$/^(nonfair)$`:                                    true,
	}
	if len(got) != len(want) {
		t.Fatalf("patterns %q, want %d", got, len(want))
	}
	for _, p := range got {
		if !want[p] {
			t.Errorf("pattern %q not among %v", p, want)
		}
	}
}

// A failure of any other kind beside the race's is "bad": nothing runs
// again, the suite fails.
func TestRaceFailOtherFailure(t *testing.T) {
	got := racefail(t, `--- FAIL: TestHoldContract (45.00s)
    --- FAIL: TestHoldContract/fair (10.00s)
        --- FAIL: TestHoldContract/fair/TokenCost (3.00s)
            testing.go:1490: race detected during execution of test
        --- FAIL: TestHoldContract/fair/EndSignals (3.00s)
            run.go:50: lost not closed
FAIL
`)
	if len(got) != 1 || got[0] != "bad" {
		t.Fatalf("got %q, want bad", got)
	}
}

// A test that the race failed and an assertion too is "bad": run again,
// a pass would hide the assertion's failure.
func TestRaceFailBesideAssertion(t *testing.T) {
	got := racefail(t, `--- FAIL: TestSeversWhileLocking (10.19s)
    loss_test.go:418: 40 severs: reported within 10.418986ms at worst
    loss_test.go:421: 
        	Error Trace:	/work/main/session/loss_test.go:421
        	Error:      	"0" is not positive
    testing.go:1712: race detected during execution of test
FAIL
FAIL	github.com/shepherdzk/shepherd/session	165.8s
`)
	if len(got) != 1 || got[0] != "bad" {
		t.Fatalf("got %q, want bad", got)
	}
}

// A test whose package the output never names cannot run again: "bad".
func TestRaceFailNoPackage(t *testing.T) {
	got := racefail(t, `--- FAIL: TestOther (1.00s)
    testing.go:1490: race detected during execution of test
`)
	if len(got) != 1 || got[0] != "bad" {
		t.Fatalf("got %q, want bad", got)
	}
}

// A package that failed although every test passed (a goroutine leak that
// its TestMain found, seen in a make test beside the race's reports in
// two other packages), or with no test failed at all, is "bad": nothing of
// it would run again, and the suite must fail.
func TestRaceFailPackageWithoutFailedTest(t *testing.T) {
	race := `--- FAIL: TestOther (1.00s)
    testing.go:1490: race detected during execution of test
FAIL
FAIL	github.com/shepherdzk/shepherd/session	50.0s
`
	for name, out := range map[string]string{
		"leak after PASS": race + `PASS
goroutine leak: found unexpected goroutines:
[Goroutine 1405 in state chan send, with github.com/go-zookeeper/zk.(*Conn).flushRequests on top of the stack:
]
FAIL	github.com/shepherdzk/shepherd/semaphore	67.0s
`,
		"race-failed test, then a leak": `--- FAIL: TestOther (1.00s)
    testing.go:1490: race detected during execution of test
FAIL
goroutine leak: found unexpected goroutines:
FAIL	github.com/shepherdzk/shepherd/semaphore	67.0s
`,
		"no test failed": race + `FAIL	github.com/shepherdzk/shepherd/semaphore	67.0s
`,
	} {
		got := racefail(t, out)
		if len(got) != 1 || got[0] != "bad" {
			t.Errorf("%s: got %q, want bad", name, got)
		}
	}
}

// scripts/failsummary.awk -v count_known=1 is make test's count of the race
// reports that are upstream go-zookeeper's known lastZxid race (a package is
// run again only if every report in it is): a report is the known one when
// any line of it, however far down, names the connection's recvLoop or
// sendSetWatches; the digest (without the flag) shows the other reports.
func TestKnownRaceCount(t *testing.T) {
	var deep strings.Builder
	for range 100 {
		deep.WriteString("  github.com/shepherdzk/shepherd/session.(*Session).run()\n")
	}
	out := "==================\nWARNING: DATA RACE\nRead at 0x01 by goroutine 7:\n" + deep.String() +
		"  github.com/go-zookeeper/zk.(*Conn).sendSetWatches()\n==================\n" +
		"==================\nWARNING: DATA RACE\nWrite at 0x02 by goroutine 9:\n" +
		"  github.com/shepherdzk/shepherd/hold.(*Hold).lose()\n==================\n" +
		"==================\nWARNING: DATA RACE\nWrite at 0x03 by goroutine 3:\n" +
		"  github.com/go-zookeeper/zk.(*Conn).recvLoop()\n==================\n" +
		"--- FAIL: TestX (0.10s)\n    testing.go:1490: race detected during execution of test\nFAIL\n" +
		"FAIL\tgithub.com/shepherdzk/shepherd/hold\t1.0s\n"
	summary := func(args ...string) string {
		cmd := exec.Command("awk", append(args, "-f", "../../scripts/failsummary.awk")...)
		cmd.Stdin = strings.NewReader(out)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("awk: %v", err)
		}
		return string(b)
	}
	if got := strings.TrimSpace(summary("-v", "count_known=1")); got != "2" {
		t.Errorf("known race reports: %q, want 2", got)
	}
	digest := summary()
	for _, want := range []string{"hold.(*Hold).lose", "2 of upstream go-zookeeper's known lastZxid race, 1 other", "--- FAIL: TestX"} {
		if !strings.Contains(digest, want) {
			t.Errorf("digest lacks %q:\n%s", want, digest)
		}
	}
	if strings.Contains(digest, "sendSetWatches") || strings.Contains(digest, "recvLoop") {
		t.Errorf("digest shows a known race report:\n%s", digest)
	}
}
