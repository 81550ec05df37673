package testkit

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// Enum is an integer enum type with a String method.
type Enum interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
	fmt.Stringer
}

// CheckStrings fails t for every value in want whose String is not the
// text want gives it, exactly. The values run in order, each as a subtest
// named by its type and number, so that a failure says which constant
// drifted. (A map, so that a value listed twice does not compile.)
func CheckStrings[T Enum](t *testing.T, want map[T]string) {
	t.Helper()
	for _, v := range slices.Sorted(maps.Keys(want)) {
		t.Run(fmt.Sprintf("%T(%d)", v, v), func(t *testing.T) {
			if got := v.String(); got != want[v] {
				t.Errorf("%T(%d).String() = %q, want %q", v, v, got, want[v])
			}
		})
	}
}
