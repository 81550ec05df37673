package failure

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBrief(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	tests := []struct {
		name, in string
		want     string // "" when checked by length and marker only
		kept     int    // bytes of in kept, when cut
	}{
		{name: "empty", in: "", want: ""},
		{name: "a Redis error", in: "WRONGTYPE Operation against a key holding the wrong kind of value", want: "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{name: "exactly the bound", in: strings.Repeat("a", MaxBrief), want: strings.Repeat("a", MaxBrief)},
		{name: "one byte over", in: strings.Repeat("a", MaxBrief+1), kept: MaxBrief - len("… [truncated  bytes]") - 3},
		{name: "100 kB", in: long, kept: MaxBrief - len("… [truncated  bytes]") - 6},
		// Cuts that fall inside a multi-byte sequence move back to its
		// start: é is 2 bytes, 😀 4.
		{name: "inside a 2-byte sequence", in: strings.Repeat("a", 486) + strings.Repeat("é", 100), kept: 486},
		{name: "inside a 4-byte sequence", in: strings.Repeat("a", 485) + strings.Repeat("😀", 100), kept: 485},
		{name: "at a sequence's start", in: strings.Repeat("a", 487) + strings.Repeat("😀", 100), kept: 487},
		// Not UTF-8: no more than 3 bytes are given up looking for a start.
		{name: "continuation bytes only", in: strings.Repeat("\x80", 2000), kept: 483},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Brief(tt.in)
			if len(got) > MaxBrief {
				t.Errorf("%d bytes, over MaxBrief", len(got))
			}
			if tt.want != "" || tt.in == "" {
				if got != tt.want {
					t.Errorf("Brief = %q, want %q", got, tt.want)
				}
				return
			}
			want := tt.in[:tt.kept] + "… [truncated " + strconv.Itoa(len(tt.in)-tt.kept) + " bytes]"
			if got != want {
				t.Errorf("Brief = …%q, want …%q", got[max(0, len(got)-40):], want[max(0, len(want)-40):])
			}
		})
	}
}

func TestBriefErr(t *testing.T) {
	if got := BriefErr(nil); got != "" {
		t.Errorf("BriefErr(nil) = %q", got)
	}
	msg := "ERR " + strings.Repeat("z", 10_000)
	if got := BriefErr(errors.New(msg)); got != Brief(msg) || len(got) > MaxBrief {
		t.Errorf("BriefErr = %d bytes, want Brief of the message", len(got))
	}
}

// FuzzBrief checks, for any text: the result is at most MaxBrief bytes;
// short text is returned unchanged; cut text is a prefix of it followed by
// the marker, whose count is exactly the bytes left out; no more than a
// sequence's length is given up to a cut; and valid UTF-8 stays valid.
func FuzzBrief(f *testing.F) {
	for _, seed := range []string{"", "OK", strings.Repeat("é", 400), strings.Repeat("😀", 200) + "x", strings.Repeat("\xff", 600), strings.Repeat("a", 511) + "€€"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Brief(s)
		if len(got) > MaxBrief {
			t.Fatalf("%d bytes", len(got))
		}
		if len(s) <= MaxBrief {
			if got != s {
				t.Fatalf("changed text within the bound: %q", got)
			}
			return
		}
		at := strings.LastIndex(got, markerHead)
		if at < 0 || !strings.HasSuffix(got, markerTail) {
			t.Fatalf("no marker: %q", got)
		}
		kept := got[:at]
		n, err := strconv.Atoi(got[at+len(markerHead) : len(got)-len(markerTail)])
		if err != nil || !strings.HasPrefix(s, kept) || len(kept)+n != len(s) {
			t.Fatalf("kept %d bytes, marker says %d cut, of %d", len(kept), n, len(s))
		}
		if room := MaxBrief - len(markerHead) - len(markerTail) - len(strconv.Itoa(len(s))); len(kept) < room-(utf8.UTFMax-1) {
			t.Fatalf("kept %d bytes, room for %d", len(kept), room)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("split a UTF-8 sequence: …%q", kept[max(0, len(kept)-8):])
		}
	})
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		write, may bool
		want       string
	}{
		{false, false, "it was not sent: re-running it is safe"},
		{true, false, "it was not sent: re-running it is safe"},
		{true, true, "it may have executed: check before re-running it"},
		{false, true, "it may have run: re-running a read is safe"},
	} {
		if got := Outcome(tc.write, tc.may, "it was not sent"); got != tc.want {
			t.Errorf("Outcome(write=%v, may=%v) = %q, want %q", tc.write, tc.may, got, tc.want)
		}
	}
}
