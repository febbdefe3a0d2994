package election_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zk, 1))
}

func uniquePath(t *testing.T) string { return testutil.UniquePath(t, "election-test") }

func open(t *testing.T, servers []string, opts ...session.Option) *session.Session {
	return testutil.Open(t, servers, opts...)
}

// checker proves single leadership on one clock: when a leader's OnElected
// starts, the previous leader's ctx must already be cancelled.
type checker struct {
	mu         sync.Mutex
	cur        context.Context
	curID      string
	violations []string
	terms      []election.Term
	order      []string
	elected    chan string
}

func newChecker() *checker { return &checker{elected: make(chan string, 1000)} }

func (c *checker) onElected(id string, ctx context.Context, term election.Term) {
	c.mu.Lock()
	if c.cur != nil && c.cur.Err() == nil {
		c.violations = append(c.violations, fmt.Sprintf("%s elected (term %v) while %s still leads", id, term, c.curID))
	}
	c.cur, c.curID = ctx, id
	c.terms = append(c.terms, term)
	c.order = append(c.order, id)
	c.mu.Unlock()
	c.elected <- id
}

func (c *checker) check(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.violations)
}

func (c *checker) waitElected(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case id := <-c.elected:
		return id
	case <-time.After(d):
		c.mu.Lock()
		order, terms := c.order, c.terms
		c.mu.Unlock()
		t.Fatalf("no leader elected within %v (elections so far: %v, terms %v)", d, order, terms)
		return ""
	}
}

// candidate runs one Election.Run in the background.
type candidate struct {
	e      *election.Election
	sess   *session.Session
	cancel context.CancelFunc
	done   chan error
}

func startCandidate(t *testing.T, c *checker, sess *session.Session, path, id string, opts ...election.Option) *candidate {
	t.Helper()
	e, err := election.New(sess, path, id, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cd := &candidate{e: e, sess: sess, cancel: cancel, done: make(chan error, 1)}
	go func() {
		cd.done <- e.Run(ctx, election.Callbacks{
			OnElected: func(ctx context.Context, term election.Term) {
				c.onElected(id, ctx, term)
				<-ctx.Done()
			},
		})
	}()
	t.Cleanup(cd.stop)
	return cd
}

func (cd *candidate) stop() {
	cd.cancel()
	<-cd.done
	cd.done <- nil // later stops return at once
}
