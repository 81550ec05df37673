package keyslot

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3 % Slots}, // the spec's CRC16 check value
		{"", 0},
		{"foo", 12182},
		{"{user1000}.following", Of("user1000")},
		{"foo{}{bar}", Of("foo{}{bar}")}, // an empty tag: the whole key
		{"foo{{bar}}zap", Of("{bar")},
		{"foo{bar}{zap}", Of("bar")},
	} {
		if got := Of(tc.key); got != tc.want {
			t.Errorf("Of(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

// TestTag checks every slot's tag: at most three characters, no brace,
// and a key tagged with it lands in its slot.
func TestTag(t *testing.T) {
	for s := range Slots {
		tag := Tag(s)
		if tag == "" || len(tag) > 3 {
			t.Fatalf("Tag(%d) = %q", s, tag)
		}
		if got := Of("prefix:{" + tag + "}:rest{x}"); got != s {
			t.Fatalf("Of(key tagged %q) = %d, want %d", tag, got, s)
		}
	}
}

func BenchmarkOf(b *testing.B) {
	for b.Loop() {
		_ = Of("user:{1000}:cart")
	}
}
