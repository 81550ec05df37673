package routing

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestTagCursor(t *testing.T) {
	tests := []struct {
		cursor, tag uint64
		want        uint64
		ok          bool
	}{
		{12345, 3, 3<<48 | 12345, true},
		{0, 3, 0, false},                        // the end is never tagged
		{12345, 0, 12345, false},                // no tag
		{1 << 50, 3, 1 << 50, false},            // the bits are the server's
		{12345, 1 << 16, 12345, false},          // does not fit
		{5<<40 | 7, 9, 9<<48 | 5<<40 | 7, true}, // a database tag below stays
	}
	for _, tt := range tests {
		got, ok := TagCursor(tt.cursor, NodeTagShift, NodeTagBits, tt.tag)
		if got != tt.want || ok != tt.ok {
			t.Errorf("TagCursor(%d, %d) = %d, %v; want %d, %v", tt.cursor, tt.tag, got, ok, tt.want, tt.ok)
		}
		if ok {
			if tag, rest := UntagCursor(got, NodeTagShift, NodeTagBits); tag != tt.tag || rest != tt.cursor {
				t.Errorf("UntagCursor(%d) = %d, %d; want %d, %d", got, tag, rest, tt.tag, tt.cursor)
			}
		}
	}
	// Both levels nest.
	inner, _ := TagCursor(777, NodeTagShift, NodeTagBits, 5)
	outer, ok := TagCursor(inner, DatabaseTagShift, DatabaseTagBits, 2)
	if tag, rest := UntagCursor(outer, DatabaseTagShift, DatabaseTagBits); !ok || tag != 2 || rest != inner {
		t.Fatalf("nested tags: %d -> %d, %d", outer, tag, rest)
	}
}

func FuzzTagCursor(f *testing.F) {
	f.Add(uint64(12345), uint64(3))
	f.Add(uint64(1<<63), uint64(65535))
	f.Fuzz(func(t *testing.T, cursor, tag uint64) {
		got, ok := TagCursor(cursor, NodeTagShift, NodeTagBits, tag)
		if !ok {
			if got != cursor {
				t.Fatalf("an untagged cursor changed: %d -> %d", cursor, got)
			}
			return
		}
		if gt, rest := UntagCursor(got, NodeTagShift, NodeTagBits); gt != tag || rest != cursor {
			t.Fatalf("TagCursor(%d, %d) = %d does not split back: %d, %d", cursor, tag, got, gt, rest)
		}
	})
}

func TestFindScan(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	tests := []struct {
		cmd    redis.Cmder
		ok     bool
		cursor uint64
	}{
		{redis.NewScanCmd(ctx, nil, "scan", uint64(42), "match", "k*"), true, 42},
		{redis.NewScanCmd(ctx, nil, "sscan", "set", uint64(7)), true, 7},
		{redis.NewScanCmd(ctx, nil, "hscan", "h", uint64(0), "count", 10), true, 0},
		{redis.NewScanCmd(ctx, nil, "zscan", "z", uint64(9)), true, 9},
		{redis.NewCmd(ctx, "SCAN", "13"), true, 13},
		{redis.NewCmd(ctx, "Scan", 5), true, 5},
		{redis.NewStringCmd(ctx, "scan", 1), false, 0}, // not a type whose reply can be read back
		{redis.NewCmd(ctx, "get", "k"), false, 0},
		{redis.NewCmd(ctx, "sscan", "set"), false, 0},
	}
	for _, tt := range tests {
		s, ok := FindScan(tt.cmd)
		if ok != tt.ok {
			t.Errorf("FindScan(%v) = %v, want %v", tt.cmd.Args(), ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if c, ok := s.Cursor(); !ok || c != tt.cursor {
			t.Errorf("Cursor of %v = %d, %v; want %d", tt.cmd.Args(), c, ok, tt.cursor)
		}
		s.SetCursor(99)
		if c, _ := s.Cursor(); c != 99 {
			t.Errorf("SetCursor on %v: %d", tt.cmd.Args(), c)
		}
	}
	sc := redis.NewScanCmd(ctx, nil, "scan", uint64(0))
	sc.SetVal([]string{"a"}, 17)
	s, _ := FindScan(sc)
	if c, ok := s.ReplyCursor(); !ok || c != 17 {
		t.Fatalf("ReplyCursor = %d, %v", c, ok)
	}
	s.SetReplyCursor(1<<48 | 17)
	if page, c := sc.Val(); c != 1<<48|17 || len(page) != 1 {
		t.Fatalf("SetReplyCursor: %v %d", page, c)
	}
	do := redis.NewCmd(ctx, "scan", "0")
	do.SetVal([]any{"23", []any{"k"}})
	s, _ = FindScan(do)
	if c, ok := s.ReplyCursor(); !ok || c != 23 {
		t.Fatalf("Do SCAN ReplyCursor = %d, %v", c, ok)
	}
	s.SetReplyCursor(5<<48 | 23)
	if v := do.Val().([]any); v[0] != "1407374883553303" {
		t.Fatalf("Do SCAN SetReplyCursor: %v", v)
	}
	if n := testing.AllocsPerRun(100, func() { FindScan(sc) }); n != 0 {
		t.Errorf("FindScan allocates %v times", n)
	}
}

// UntaggedCursors keeps the newest MaxUntaggedCursors cursors, forgets
// the oldest first, and a cursor remembered again keeps its place.
func TestUntaggedCursorsAreBounded(t *testing.T) {
	var u UntaggedCursors
	for c := uint64(1); c <= MaxUntaggedCursors; c++ {
		u.Remember(c, c%7)
	}
	u.Remember(1, 9) // again: a new origin, the same place
	u.Remember(MaxUntaggedCursors+1, 5)
	tests := []struct {
		cursor, origin uint64
		ok             bool
	}{
		{1, 0, false}, // the oldest, forgotten for the newest
		{2, 2, true},
		{MaxUntaggedCursors, MaxUntaggedCursors % 7, true},
		{MaxUntaggedCursors + 1, 5, true},
		{MaxUntaggedCursors + 2, 0, false},
	}
	for _, tt := range tests {
		origin, ok := u.Lookup(tt.cursor)
		if ok != tt.ok || origin != tt.origin {
			t.Errorf("Lookup(%d) = %d, %v; want %d, %v", tt.cursor, origin, ok, tt.origin, tt.ok)
		}
	}
	if len(u.order) != MaxUntaggedCursors || len(u.origin) != MaxUntaggedCursors {
		t.Errorf("holds %d cursors (%d in order), want %d", len(u.origin), len(u.order), MaxUntaggedCursors)
	}
}
