package zero

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDefault(t *testing.T) {
	tests := []struct {
		name      string
		set, want time.Duration
	}{
		{"zero takes the default", 0, time.Second},
		{"a set value stays", 3 * time.Millisecond, 3 * time.Millisecond},
		{"a negative value (off) stays", -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.set
			Default(&d, time.Second)
			if d != tt.want {
				t.Fatalf("Default(%v, 1s) = %v, want %v", tt.set, d, tt.want)
			}
		})
	}
	n, s, f := 0, "", 0.0
	Default(&n, 4)
	Default(&s, "x")
	Default(&f, 0.5)
	if n != 4 || s != "x" || f != 0.5 {
		t.Fatalf("int, string, float: %d %q %v; want 4 \"x\" 0.5", n, s, f)
	}
}
