package recipe_test

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/recipe"
)

// go doc shows an alias's comment alone: Hold's names its methods, and
// that list must stay the method set of *Hold.
func TestHoldDocListsItsMethods(t *testing.T) {
	src, err := os.ReadFile("recipe.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)// Its methods: (.*?) \(go doc`).FindSubmatch(src)
	require.NotNil(t, m, "no method list in Hold's doc")
	text := strings.NewReplacer("//", " ", "\n", " ", " and ", ", ").Replace(string(m[1]))
	var listed []string
	for _, f := range strings.Split(text, ",") {
		listed = append(listed, strings.TrimSpace(f))
	}
	var methods []string
	typ := reflect.TypeOf((*recipe.Hold)(nil))
	for i := range typ.NumMethod() {
		methods = append(methods, typ.Method(i).Name)
	}
	sort.Strings(listed)
	require.Equal(t, methods, listed)
}
