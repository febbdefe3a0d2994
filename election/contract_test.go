package election_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/holdtest"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// leadership is a Leadership as the contract sees it: its release is
// Resign, its token its hold's.
type leadership struct{ *election.Leadership }

func (l leadership) Token(ctx context.Context) (hold.Token, error) { return l.Hold().Token(ctx) }
func (l leadership) Release(ctx context.Context) error             { return l.Resign(ctx) }

func electionRecipe(nonFair bool) holdtest.Recipe {
	var opts []election.Option
	var containers func(string) []string
	nodes := 1
	if nonFair {
		nodes = 2 // the race's node and the candidate's registration
		opts = append(opts, election.NonFair())
		// A non-fair election's registry of candidates is a container
		// (docs/handover.md).
		containers = func(full string) []string { return []string{full + "/candidates"} }
	}
	return holdtest.Recipe{
		Name:    "election",
		Kind:    recipe.KindLatch,
		NonFair: nonFair,
		// Campaign reads the term before it returns.
		TokenAtGrant: true,
		New: func(t *testing.T, s *session.Session, path, id string) holdtest.Contender {
			e, err := election.New(s, path, id, opts...)
			require.NoError(t, err)
			return holdtest.Contender{
				Acquire: func(ctx context.Context) (holdtest.Hold, error) {
					l, err := e.Campaign(ctx)
					if err != nil {
						return nil, err
					}
					return leadership{l}, nil
				},
				Held: e.IsLeader,
				Holder: func(ctx context.Context) (string, error) {
					l, err := e.Leader(ctx)
					return l.ID, err
				},
			}
		},
		Containers:           containers,
		Nodes:                nodes,
		ReleaseLost:          nil, // resigning a lost leadership
		ReleaseAgain:         election.ErrNotLeader,
		ReleasedValidate:     election.ErrNotLeader, // and ErrLost
		ReleasedFenced:       election.ErrLost,
		ErrSequenceExhausted: election.ErrSequenceExhausted,
		Later: func(t *testing.T, earlier, later holdtest.Hold) {
			require.Greater(t, later.(leadership).Term(), earlier.(leadership).Term(), "terms grow")
		},
	}
}

// TestHoldContract: a Campaign's leadership keeps the hold contract
// (holdtest), fair and non-fair, at once, each on a server of its own
// (holdtest.Run).
func TestHoldContract(t *testing.T) {
	t.Run("fair", func(t *testing.T) { t.Parallel(); holdtest.Run(t, zktest.Start(t, 1), electionRecipe(false)) })
	t.Run("nonfair", func(t *testing.T) { t.Parallel(); holdtest.Run(t, zktest.Start(t, 1), electionRecipe(true)) })
}
