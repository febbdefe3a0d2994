package election_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
)

// TestTopLevelPath: a fair and a non-fair election directly under the root,
// and directly under a namespace's own root (a path with no parent of its own
// to create), are won, held and resigned like any other, and leave nothing
// behind but what they document: the path as a container (which the server
// removes), or a non-fair race's persistent path.
func TestTopLevelPath(t *testing.T) {
	kinds := []struct {
		name string
		opts []election.Option
	}{
		{"fair", nil},
		{"nonfair", []election.Option{election.NonFair()}},
	}
	for _, namespaced := range []bool{false, true} {
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%s/namespace=%v", k.name, namespaced), func(t *testing.T) {
				s, path, top := testutil.OpenTopLevel(t, zk.Servers(), "elect", namespaced)
				ctx := testutil.Ctx(t, 10*time.Second)
				e, err := election.New(s, path, "a", k.opts...)
				require.NoError(t, err)
				l, err := e.Campaign(ctx)
				require.NoError(t, err)
				require.True(t, e.IsLeader())
				require.NoError(t, l.Validate(ctx), "not leading")
				full := s.Path(path)
				require.NotEmpty(t, testutil.Leftovers(t, s, top, top, full), "no node leads")
				require.NoError(t, l.Resign(ctx))
				require.False(t, e.IsLeader())
				// A non-fair election's registry of candidates is a
				// container too (docs/handover.md).
				require.Empty(t, testutil.Leftovers(t, s, top, top, full, full+"/candidates"), "left behind")
				if k.opts != nil {
					require.NotEqual(t, int32(-1), testutil.Version(t, s, full), "the non-fair path is persistent")
				}
			})
		}
	}
}
