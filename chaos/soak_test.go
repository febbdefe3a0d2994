package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
)

// soakFaults are the faults the soak draws from (the client SIGKILL and the
// standalone restart are the matrix's: they need a harness of their own).
var soakFaults = []string{"leader-killed", "follower-killed", "stall-short", "stall-long", "requests-cut",
	"release-answer-lost", "session-expired", "ensemble-restarted", "paused-node-revoked", "handover"}

func faultByName(name string) fault {
	for _, f := range faults {
		if f.name == name {
			return f
		}
	}
	panic("no fault " + name)
}

// TestChaosSoak: 20 clients mix every recipe on a 3-node ensemble while
// faults drawn from a seeded random source are injected, for -chaos.duration
// (make chaos: 10 minutes; the default test run: under a minute). It prints
// the seed (replay with -chaos.seed), the operations, the faults, and the
// violations, which must be none.
func TestChaosSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes a minute or more; run without -short")
	}
	seed := *soakSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("chaos soak: seed %d, duration %v (replay: make chaos SEED=%d)", seed, *soakDuration, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	clients := map[string]int{"mutex-fair": 4, "mutex-nonfair": 3, "rwlock": 4, "semaphore": 3, "election-fair": 3, "election-nonfair": 3}
	var hs []*harness
	total := 0
	for _, spec := range recipes {
		// Each client's policy is drawn too: holds that end at a
		// disconnect and holds that ride through it, side by side.
		var drawn []string
		policy := func(i int) session.DisconnectPolicy {
			p := session.StopOnDisconnect
			if rng.IntN(2) == 0 {
				p = session.PauseOnDisconnect
			}
			drawn = append(drawn, fmt.Sprintf("c%d=%v", i, p))
			return p
		}
		h := newHarness(t, spec, ensemble, clients[spec.name], policy)
		t.Logf("%s: %s", spec.name, strings.Join(drawn, " "))
		hs = append(hs, h)
		total += clients[spec.name]
	}
	require.Equal(t, 20, total)
	for _, h := range hs {
		h.waitGrants(2, 30*time.Second)
	}
	injected := map[string]int{}
	deadline := time.Now().Add(*soakDuration)
	for i := 0; i < 10000 && time.Now().Before(deadline); i++ {
		name := soakFaults[rng.IntN(len(soakFaults))]
		if name == "ensemble-restarted" && rng.IntN(3) != 0 {
			continue // the heaviest fault, drawn less often
		}
		h := hs[rng.IntN(len(hs))]
		if f := faultByName(name); f.elections && !strings.HasPrefix(h.spec.name, "election") {
			continue
		}
		before := h.counts()
		t.Logf("fault %d: %s on %s", i, name, h.spec.name)
		faultByName(name).inject(h)
		injected[name]++
		h.progressed(before, 60*time.Second)
		pause := time.Duration(100+rng.IntN(900)) * time.Millisecond
		time.Sleep(pause) // the time between faults: part of the random schedule
	}
	ops := 0
	var lines []string
	for _, h := range hs {
		g, gap, gaps, fences, v := h.chk.summary()
		pauses, resumes, beside := h.chk.pauseSummary()
		ops += g
		lines = append(lines, fmt.Sprintf("%s: %d grants, %d fenced writes, %d violations, min loss→grant gap %v over %d losses, %d pauses, %d resumes, %d grants beside a paused hold",
			h.spec.name, g, fences, len(v), gap, gaps, pauses, resumes, beside))
	}
	for _, h := range hs {
		h.finish()
	}
	var fs []string
	nf := 0
	for k, v := range injected {
		fs = append(fs, fmt.Sprintf("%s=%d", k, v))
		nf += v
	}
	sort.Strings(fs)
	t.Logf("chaos soak: seed %d: %d operations, %d faults (%s), 0 violations\n  %s", seed, ops, nf,
		strings.Join(fs, " "), strings.Join(lines, "\n  "))
}
